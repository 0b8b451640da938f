// Package vfs holds Cairn's versioned file trees.
//
// A snapshot is an immutable manifest: a canonical JSON document naming every
// file of a directory tree by path, content.ContentRef and size. File bytes live
// in the blob store; the manifest is itself a blob, and writing it records a
// retention edge from the manifest to every file blob it names. Editing one file
// yields a new manifest that reuses every unchanged file ref, so a snapshot of a
// large tree after a one-file edit costs one file blob and one manifest.
//
// Only files are listed: directories exist implicitly as path prefixes, so an
// empty directory is not represented.
package vfs
