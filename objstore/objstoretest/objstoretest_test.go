package objstoretest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/cairn-agents/cairn/objstore"
	"github.com/cairn-agents/cairn/objstore/objstoretest"
)

// memStore is a correct in-memory Store; a fault switches one rule off.
type memStore struct {
	fault string
	mu    sync.Mutex
	m     map[string][]byte
}

func (s *memStore) check(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.fault == "no-key-validation" {
		return nil
	}
	return objstore.ValidateKey(key)
}

func (s *memStore) Put(ctx context.Context, key string, data []byte) error {
	if err := s.check(ctx, key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.fault {
	case "keeps-caller-buffer":
		s.m[key] = data
	case "no-truncate":
		// Like writing a file in place without truncating it.
		old := s.m[key]
		if len(data) > len(old) {
			old = make([]byte, len(data))
		}
		n := copy(old, data)
		s.m[key] = old[:max(n, len(old))]
	default:
		s.m[key] = bytes.Clone(data)
	}
	return nil
}

func (s *memStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	data, ok := s.m[key]
	if !ok {
		if s.fault == "untyped-not-found" {
			return nil, errors.New("no such object")
		}
		return nil, fmt.Errorf("%w: %q", objstore.ErrNotFound, key)
	}
	data = bytes.Clone(data)
	if s.fault == "corrupt-large" && len(data) > 1<<20 {
		// Like gofakes3 storing aws-chunked framing as the body: wrong
		// bytes, and here even the right length.
		data[len(data)/2] ^= 1
	}
	return data, nil
}

func (s *memStore) Delete(ctx context.Context, key string) error {
	if err := s.check(ctx, key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[key]; !ok && s.fault == "delete-absent-fails" {
		return fmt.Errorf("%w: %q", objstore.ErrNotFound, key)
	}
	delete(s.m, key)
	return nil
}

func newMem(fault string) func(*testing.T) objstore.Store {
	return func(*testing.T) objstore.Store { return &memStore{fault: fault, m: map[string][]byte{}} }
}

// The suite accepts a correct store that is neither of the real backends.
func TestRunPassesCorrectStore(t *testing.T) {
	objstoretest.Run(t, newMem(""))
}

const faultEnv = "CAIRN_OBJSTORETEST_FAULT"

// TestFaultyStore runs the suite on a broken store; only
// TestRunCatchesFaults starts it, in a child process, expecting failure.
func TestFaultyStore(t *testing.T) {
	fault := os.Getenv(faultEnv)
	if fault == "" {
		return // a helper process entry point, like os/exec's TestHelperProcess
	}
	objstoretest.Run(t, newMem(fault))
}

// Each broken store fails the suite, in the subtest that names its fault.
func TestRunCatchesFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child test processes")
	}
	for fault, subtest := range map[string]string{
		"corrupt-large":       "RoundTrip",
		"keeps-caller-buffer": "RoundTrip",
		"no-truncate":         "Overwrite",
		"untyped-not-found":   "GetAbsent",
		"delete-absent-fails": "Delete",
		"no-key-validation":   "InvalidKeys",
	} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestFaultyStore$", "-test.v")
			cmd.Env = append(os.Environ(), faultEnv+"="+fault)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("suite passed a store with fault %q (err %v):\n%s", fault, err, out)
			}
			if want := "--- FAIL: TestFaultyStore/" + subtest + " "; !strings.Contains(string(out), want) {
				t.Fatalf("output lacks %q:\n%s", want, out)
			}
		})
	}
}
