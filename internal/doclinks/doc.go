// Package doclinks holds a test that the repository's documents link only
// to files and headings that exist, so a link in the README works in a
// fresh clone.
package doclinks
