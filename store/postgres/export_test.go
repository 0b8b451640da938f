package postgres

// SetTestHookBeforeInsert makes s call f between uploading a large blob's
// object and inserting its catalog row.
func SetTestHookBeforeInsert(s *Store, f func()) { s.testHookBeforeInsert = f }

// Listening reports whether db's append listener holds a connection.
func Listening(db *DB) bool { return db.appends.listening() }
