// Package layers holds the import-boundary test: the package table of the
// design (DESIGN.md, "Packages") as data, checked against what the module's
// packages really import, so an arrow pointing up the table fails CI.
package layers
