package archive

// Limits bound what a reader accepts: an archive is untrusted input.
type Limits struct {
	// ManifestBytes bounds the manifest entry.
	ManifestBytes int64
	// BlobBytes bounds one blob entry.
	BlobBytes int64
	// EventsBytes bounds one events entry (a chunk of a session's events).
	EventsBytes int64
	// Entries bounds the number of entries, the manifest included.
	Entries int64
}

// DefaultLimits are what cairn import accepts.
var DefaultLimits = Limits{
	ManifestBytes: 64 << 20,
	BlobBytes:     MaxBlobBytes,
	EventsBytes:   EventsChunkBytes + maxEventBytes,
	Entries:       10_000_000,
}

// MaxBlobBytes is the largest blob an archive holds; an export refuses a
// larger one.
const MaxBlobBytes = 64 << 20

// EventsChunkBytes is where a writer starts a new events entry: a session's
// events are split into entries of about this size, so neither side holds
// a long session's events at once.
const EventsChunkBytes = 4 << 20

// maxEventBytes bounds one event line.
const maxEventBytes = 16 << 20

// windowBytes is the zstd window: the writer's, and the most a reader
// allocates for one.
const windowBytes = 8 << 20
