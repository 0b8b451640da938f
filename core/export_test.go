package core

// CountsMatchEntries reports whether the state's counts of its entries
// (instructions, run-scoped, refresh-managed), kept as they change, are
// what counting them again gives.
func (s *State) CountsMatchEntries() bool {
	c := *s
	c.recount()
	return c.instructions == s.instructions && c.runScoped == s.runScoped && c.managed == s.managed
}

// SetCheckpointTopMax makes indexes nest their pages beyond n pages a
// list, until the test ends.
func SetCheckpointTopMax(t interface{ Cleanup(func()) }, n int) {
	old := checkpointTopMax
	checkpointTopMax = n
	t.Cleanup(func() { checkpointTopMax = old })
}
