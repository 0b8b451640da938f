// Package assembly turns a session's linked file trees into the explicit
// inputs of a turn: assembled instructions with their assembly report, the
// skill catalog and the sub-agent menu.
//
// The caller resolves each linked workspace or snapshot to a manifest at the
// refresh boundary and passes the trees here. Everything produced is stored as
// immutable blobs, so a later edit to a workspace never changes a request that
// was already built from them. Every stored document that names other blobs
// records retention edges to them, because a hash inside a payload does not by
// itself keep those bytes alive.
//
// Output depends only on the trees' contents and the given order of trees:
// no clock, no map order. Identical inputs give identical digests, which keeps
// request prefixes stable for provider caches.
package assembly
