package main

import (
	"fmt"
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
)

// cpuProfile starts a CPU profile (of `cairn serve` or `cairn worker`) into
// the file CAIRN_CPU_PROFILE names, if
// it is set ("%p" in it becomes the process id, for a benchmark that
// restarts the server), and returns what stops it: how the long-session
// benchmarks see where a real server's time goes (`go tool pprof cairn FILE`).
// On stopping it also writes FILE.allocs, where the server's garbage came
// from (`go tool pprof -sample_index alloc_space cairn FILE.allocs`), and
// FILE.metrics, counts of the runtime's work (goroutines created, collector
// cycles, bytes allocated): work counted, where CPU time on a shared
// machine varies from run to run.
func cpuProfile() (stop func(), err error) {
	path := os.Getenv("CAIRN_CPU_PROFILE")
	if path == "" {
		return func() {}, nil
	}
	path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("CAIRN_CPU_PROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("CAIRN_CPU_PROFILE: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if a, err := os.Create(path + ".allocs"); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(a, 0)
			a.Close()
		}
		_ = os.WriteFile(path+".metrics", runtimeCounts(), 0o644)
	}, nil
}

// runtimeCounts are "name value" lines of the runtime's counters.
func runtimeCounts() []byte {
	samples := []metrics.Sample{
		{Name: "/sched/goroutines-created:goroutines"},
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/gc/heap/allocs:bytes"},
		{Name: "/gc/heap/allocs:objects"},
		{Name: "/cpu/classes/gc/total:cpu-seconds"},
		{Name: "/cpu/classes/user:cpu-seconds"},
	}
	metrics.Read(samples)
	var out []byte
	for _, s := range samples {
		switch s.Value.Kind() {
		case metrics.KindUint64:
			out = fmt.Appendf(out, "%s %d\n", s.Name, s.Value.Uint64())
		case metrics.KindFloat64:
			out = fmt.Appendf(out, "%s %.3f\n", s.Name, s.Value.Float64())
		}
	}
	return out
}
