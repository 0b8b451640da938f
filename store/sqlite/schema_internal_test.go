package sqlite

import (
	"strings"
	"testing"
)

// No index of the sessions table follows has_unfinished, which every run
// sets and clears: each would be one more page written twice a run.
func TestNoIndexFollowsUnfinishedRuns(t *testing.T) {
	s := openTest(t, t.TempDir())
	rows, err := s.reader.Query(`SELECT name, coalesce(sql, '') FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sessions'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, sql string
		if err := rows.Scan(&name, &sql); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(sql, "has_unfinished") {
			t.Errorf("index %s follows has_unfinished: %s", name, sql)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
