//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes f's exclusive advisory lock without waiting; closing f
// releases it.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}
