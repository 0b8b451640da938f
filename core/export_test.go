package core

// CountsMatchEntries reports whether the state's counts of its entries
// (instructions, run-scoped, refresh-managed), kept as they change, are
// what counting them again gives.
func (s *State) CountsMatchEntries() bool {
	c := *s
	c.recount()
	return c.instructions == s.instructions && c.runScoped == s.runScoped && c.managed == s.managed
}
