package runtime

// PutSegments exposes putSegments to the external tests.
var PutSegments = (*Executor).putSegments
