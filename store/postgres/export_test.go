package postgres

// SetTestHookBeforeInsert makes s call f between uploading a large blob's
// object and inserting its catalog row.
func SetTestHookBeforeInsert(s *Store, f func()) { s.testHookBeforeInsert = f }
