package main

import (
	"bufio"
	"io"
)

// answers are the lines a user types, read by one goroutine so that two
// questions (an approval, and Ctrl-C's "cancel the run?") can wait for the
// next line without racing on the reader; a question given up leaves the
// line for the next.
type answers struct{ lines chan string }

func newAnswers(r io.Reader) *answers {
	a := &answers{lines: make(chan string)}
	go func() {
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" || err == nil {
				a.lines <- line
			}
			if err != nil {
				close(a.lines)
				return
			}
		}
	}()
	return a
}

// next waits for the next line; ok is false once input has ended.
func (a *answers) next() (line string, ok bool) {
	line, ok = <-a.lines
	return line, ok
}
