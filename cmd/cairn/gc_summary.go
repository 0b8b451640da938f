package main

import (
	"fmt"
	"io"

	"github.com/cairn-agents/cairn/retention"
)

// printGCSummary says what a collector pass did, in words a user can check
// against `cairn storage report`: how many blobs there are, how many the
// grace kept from being examined, and what was (or would be) deleted.
func printGCSummary(out io.Writer, st retention.Stats, opt retention.Options) {
	if st.LeaderBusy && st.UniversesScanned == 0 {
		fmt.Fprintln(out, "another process (a server's background collector) is collecting; nothing was examined")
		return
	}
	if opt.DryRun {
		fmt.Fprintln(out, "dry run: nothing was deleted")
	}
	young := max(st.BlobsStored-st.RowsScanned, 0)
	fmt.Fprintf(out, "%d blobs stored in %d universe(s); examined %d, kept %d put or used within the grace (%s) without examining them\n",
		st.BlobsStored, st.UniversesScanned, st.RowsScanned, young, opt.Grace)
	held := st.RowsScanned - st.Candidates
	switch {
	case opt.DryRun:
		fmt.Fprintf(out, "%d examined blobs are held (by a session, checkpoint, snapshot, workspace or edge); %d are held by nothing and would be deleted (%d bytes)\n",
			held, st.Candidates, st.CandidateBytes)
	default:
		fmt.Fprintf(out, "%d examined blobs are held; deleted %d blobs (%d bytes)\n", held, st.RowsDeleted, st.BytesFreed)
	}
	if st.ObjectErrors > 0 || st.HolderConflicts > 0 {
		fmt.Fprintf(out, "%d object deletions failed and %d deletions met a new holder; a later pass retries them\n", st.ObjectErrors, st.HolderConflicts)
	}
}
