package postgres

import (
	"net/url"
	"regexp"
	"strings"
)

// Connection strings carry passwords; nothing this package returns may
// repeat one. The driver's own redaction is best effort for malformed input,
// so errors that may quote the string are scrubbed here as well.

// redactURL returns the connection string with any password masked, for messages.
func redactURL(raw string) string {
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "(unparseable URL)"
		}
		q := u.Query()
		if q.Has("password") {
			q.Set("password", "xxxxx")
			u.RawQuery = q.Encode()
		}
		return u.Redacted()
	}
	return kvPassword.ReplaceAllString(raw, "${1}xxxxx")
}

// kvPassword finds the password of a keyword/value connection string.
var kvPassword = regexp.MustCompile(`(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// scrub returns err's text with every password the connection string
// carries masked, for driver errors that may quote parts of that string.
func scrub(err error, raw string) string {
	msg := err.Error()
	for _, secret := range passwords(raw) {
		if len(secret) > 0 {
			msg = strings.ReplaceAll(msg, secret, "xxxxx")
		}
	}
	return msg
}

// passwords lists the secrets a connection string may carry, as written and
// decoded, including from a URL too malformed for net/url to parse.
func passwords(raw string) []string {
	var out []string
	if u, err := url.Parse(raw); err == nil {
		if p, ok := u.User.Password(); ok {
			out = append(out, p, url.PathEscape(p), url.QueryEscape(p))
		}
		if p := u.Query().Get("password"); p != "" {
			out = append(out, p, url.QueryEscape(p))
		}
	}
	if i := strings.Index(raw, "://"); i >= 0 {
		// user:password@host — take what lies between the first ':' and the
		// last '@' of the authority, parseable or not.
		rest := raw[i+3:]
		if at := strings.LastIndex(rest, "@"); at >= 0 {
			if c := strings.Index(rest[:at], ":"); c >= 0 {
				out = append(out, rest[c+1:at])
			}
		}
	}
	for _, m := range kvPassword.FindAllStringSubmatch(raw, -1) {
		out = append(out, m[2], strings.Trim(m[2], "'"))
	}
	return out
}
