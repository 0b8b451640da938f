package vfs

import "strings"

// Limits bound a snapshot. A zero field means the default. The defaults are
// also the ceiling every stored manifest obeys: WriteManifest and ReadManifest
// enforce DefaultLimits, so tighter limits may be applied when building, and
// looser ones are clamped to the defaults.
type Limits struct {
	MaxFiles      int   // number of files
	MaxDepth      int   // path segments in one path ("a/b.md" has depth 2)
	MaxPathBytes  int   // bytes in one path
	MaxFileBytes  int64 // size of one file
	MaxTotalBytes int64 // sum of file sizes
}

// Default limit values.
const (
	DefaultMaxFiles      = 10_000
	DefaultMaxDepth      = 32
	DefaultMaxPathBytes  = 1024
	DefaultMaxFileBytes  = 32 << 20
	DefaultMaxTotalBytes = 512 << 20
)

// DefaultLimits returns the default limits.
func DefaultLimits() Limits {
	return Limits{
		MaxFiles:      DefaultMaxFiles,
		MaxDepth:      DefaultMaxDepth,
		MaxPathBytes:  DefaultMaxPathBytes,
		MaxFileBytes:  DefaultMaxFileBytes,
		MaxTotalBytes: DefaultMaxTotalBytes,
	}
}

// effective fills zero fields with defaults and clamps every field to its default.
func (l Limits) effective() Limits {
	d := DefaultLimits()
	pick := func(v, def int64) int64 {
		if v <= 0 || v > def {
			return def
		}
		return v
	}
	return Limits{
		MaxFiles:      int(pick(int64(l.MaxFiles), int64(d.MaxFiles))),
		MaxDepth:      int(pick(int64(l.MaxDepth), int64(d.MaxDepth))),
		MaxPathBytes:  int(pick(int64(l.MaxPathBytes), int64(d.MaxPathBytes))),
		MaxFileBytes:  pick(l.MaxFileBytes, d.MaxFileBytes),
		MaxTotalBytes: pick(l.MaxTotalBytes, d.MaxTotalBytes),
	}
}

// MaxSegmentBytes bounds one segment (a file or directory name) of a path
// written: the name limit of common file systems (ext4, APFS, NTFS), so any
// tree written can also be exported. Stored manifests are read without it,
// so a tree written before the rule stays readable (and fixable).
const MaxSegmentBytes = 255

// checkSegments refuses a path with a segment over MaxSegmentBytes.
func checkSegments(p string) error {
	for seg := range strings.SplitSeq(p, "/") {
		if len(seg) > MaxSegmentBytes {
			return &LimitError{Limit: "segment bytes", Max: MaxSegmentBytes, Got: int64(len(seg)), Path: p}
		}
	}
	return nil
}

// checkPath checks the per-path limits (depth, path bytes).
func (l Limits) checkPath(p string) error {
	if len(p) > l.MaxPathBytes {
		return &LimitError{Limit: "path bytes", Max: int64(l.MaxPathBytes), Got: int64(len(p)), Path: p}
	}
	if d := depth(p); d > l.MaxDepth {
		return &LimitError{Limit: "depth", Max: int64(l.MaxDepth), Got: int64(d), Path: p}
	}
	return nil
}

// checkFile checks the per-file size limit.
func (l Limits) checkFile(p string, size int64) error {
	if size > l.MaxFileBytes {
		return &LimitError{Limit: "file bytes", Max: l.MaxFileBytes, Got: size, Path: p}
	}
	return nil
}
