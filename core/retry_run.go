package core

// RejectRunNotRetryable refuses a retry of a run that did not fail, or of
// one that is not the session's last run (a later run has moved the
// context on, so "where it stopped" is gone).
const RejectRunNotRetryable = "run_not_retryable"

// retryable checks that run id may be retried (see StartRun.RetryOf). When
// the session's last run already retries it, that run is the answer, as for
// a repeated submission.
func retryable(s *State, id string) (Admission, error) {
	r := s.runs[id]
	if r == nil {
		return Admission{}, reject(RejectUnknownReference, "run %s not found", id)
	}
	last := s.runs[s.runOrder[len(s.runOrder)-1]]
	if last.RetryOf == id {
		return Admission{RunID: last.ID, Status: last.Status, Duplicate: true}, nil
	}
	if r.Status != StatusFailed {
		return Admission{}, reject(RejectRunNotRetryable, "run %s is %s: only a failed run can be retried", id, r.ShownStatus())
	}
	if !r.InputConsumed {
		return Admission{}, reject(RejectRunNotRetryable, "run %s failed before its input entered context: start a new run with that input", id)
	}
	if last != r {
		return Admission{}, reject(RejectRunNotRetryable, "run %s is not the session's last run (run %s came after it): start a new run instead", id, last.ID)
	}
	return Admission{}, nil
}
