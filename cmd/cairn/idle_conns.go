package main

import "time"

// idleConnTimeout is how long a server keeps a client's connection that
// waits for its next request. Clients keep their connections between
// calls (the Go and Python clients, browsers); without a bound, one that
// opens many and leaves them idle would hold a descriptor each for as long
// as it likes. A long-poll is a request, not idleness: it is not cut.
// Tests shorten it.
var idleConnTimeout = 2 * time.Minute
