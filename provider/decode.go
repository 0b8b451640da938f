package provider

// DecodeError says why a provider's response body could not be decoded. It
// never quotes the body (it may hold user content).
type DecodeError struct {
	API    string // the adapter, as a message prefix: "chat", "responses", …
	Reason string
	Err    error
}

func (e *DecodeError) Error() string {
	msg := e.API + ": decode response: " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *DecodeError) Unwrap() error { return e.Err }
