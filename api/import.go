package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/cairn-agents/cairn/archive"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// ImportPath takes an archive (POST, Content-Type ArchiveMediaType;
// ?newIds=true maps every session to a fresh id) into the universe. It is
// served beside /rpc with the same authentication and protection.
const ImportPath = "/import"

// ImportResult says what an import did.
type ImportResult struct {
	Sessions   []ImportedSession   `json:"sessions"`
	Workspaces []ImportedWorkspace `json:"workspaces"`
	// Blobs and Bytes count the blobs the archive sent; Skipped counts
	// those of its manifest the target already held, which were not sent.
	Blobs   int   `json:"blobs"`
	Bytes   int64 `json:"bytes"`
	Skipped int   `json:"skipped"`
}

// ImportedSession maps an archived session to the id it has here.
type ImportedSession struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// ImportedWorkspace is an archived workspace; Reused when the target
// already had it at the same head.
type ImportedWorkspace struct {
	Name   string         `json:"name"`
	Head   content.Digest `json:"head"`
	Reused bool           `json:"reused,omitempty"`
}

func (s *Server) serveImport(w http.ResponseWriter, r *http.Request) {
	host, ok := s.archiveHost(w, r, ArchiveMediaType)
	if !ok {
		return
	}
	c := call{Server: s, host: host}
	res, err := c.importArchive(r.Context(), r.Body, r.URL.Query().Get("newIds") == "true")
	if err != nil {
		e := s.toRPCError("import", err)
		writeJSON(w, streamStatus(e), Response{JSONRPC: "2.0", ID: nullID, Error: e})
		return
	}
	raw, err := json.Marshal(res)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, Response{JSONRPC: "2.0", ID: nullID, Error: s.toRPCError("import", err)})
		return
	}
	writeJSON(w, http.StatusOK, Response{JSONRPC: "2.0", ID: nullID, Result: raw})
}

// importing is one import under way: what the archive said and what the
// target holds.
type importing struct {
	m       archive.Manifest
	index   map[string]int          // archived session id → its place in m.Sessions
	to      map[string]string       // archived session id → id here
	needed  map[content.Digest]bool // blobs the target lacked: the stream must bring them
	events  *spool
	result  ImportResult
	created []archive.Workspace // workspaces to create
	// lives are each session's lifecycle projection as its events pass;
	// forkPoints are the projections of sessions at the seqs archived
	// forks fork them at, taken as those events pass.
	lives      []core.Lifecycle
	forkPoints map[int]map[int64]core.Lifecycle
	// state is the state of the session whose events are passing, folded
	// by the core as they pass, so a session that would not replay is
	// refused; forkStates are sources' states at their forks' points.
	state      *core.State
	forkStates map[int]map[int64][]byte
}

// importArchive reads an archive in full and checks it before anything but
// its blobs is written: every blob against its digest, every session's
// events for gaps, every ref for a blob in the archive or here, and every
// session id and workspace name for a clash. Only then are workspaces and
// sessions created. Blobs of a refused archive stay unreferenced and go
// after the collector's grace.
func (s call) importArchive(ctx context.Context, body io.Reader, newIDs bool) (ImportResult, error) {
	ar, err := archive.NewReader(body, archive.DefaultLimits)
	if err != nil {
		return ImportResult{}, err
	}
	defer ar.Close()
	if _, ok := s.host.Log().(store.Importer); !ok {
		return ImportResult{}, unsupported("this server's store cannot import sessions")
	}
	im := &importing{m: ar.Manifest, to: map[string]string{}, needed: map[content.Digest]bool{}, forkPoints: map[int]map[int64]core.Lifecycle{},
		forkStates: map[int]map[int64][]byte{}}
	if err := s.checkClashes(ctx, im, newIDs); err != nil {
		return ImportResult{}, err
	}
	if im.events, err = newSpool(); err != nil {
		return ImportResult{}, err
	}
	defer im.events.close()
	im.startLives()
	// Touch renews the grace of what is here, so none of it goes while
	// the import runs; what is not here must come in the stream.
	for i := 0; i < len(im.m.Blobs); i += MaxBlobsMissing {
		lacking, err := s.host.Blobs().Touch(ctx, im.m.Blobs[i:min(i+MaxBlobsMissing, len(im.m.Blobs))])
		if err != nil {
			return ImportResult{}, err
		}
		for _, d := range lacking {
			im.needed[d] = true
		}
	}
	im.result.Skipped = len(im.m.Blobs) - len(im.needed)
	for {
		e, err := ar.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return ImportResult{}, err
		}
		if e.Blob != nil {
			if _, err := s.host.Blobs().Put(ctx, e.Data); err != nil {
				return ImportResult{}, err
			}
			delete(im.needed, *e.Blob)
			im.result.Blobs++
			im.result.Bytes += int64(len(e.Data))
			continue
		}
		if err := im.addEvents(e); err != nil {
			return ImportResult{}, err
		}
	}
	if len(im.needed) > 0 {
		return ImportResult{}, missingBlobs(im.needed)
	}
	if err := s.commitImport(ctx, im); err != nil {
		return ImportResult{}, err
	}
	// A session exported during a run goes on with it here, as after a
	// crash: the host resumes its work from its log.
	if rh, ok := s.host.(ResumeHost); ok {
		for i, as := range im.m.Sessions {
			if im.lives[i].Unfinished() {
				if err := rh.Resume(ctx, im.to[as.ID]); err != nil {
					s.log.Error("resuming an imported session failed", "session", im.to[as.ID], "err", err)
				}
			}
		}
	}
	return im.result, nil
}

// ResumeHost is implemented by hosts that can drive the unfinished work of
// a session written to their store by other means (an import).
type ResumeHost interface {
	Resume(ctx context.Context, sessionID string) error
}

// checkClashes maps the archived session ids to the ones they get here and
// refuses an id or a workspace that is taken.
func (s call) checkClashes(ctx context.Context, im *importing, newIDs bool) error {
	for _, as := range im.m.Sessions {
		to := as.ID
		if newIDs {
			to = s.host.NewID("s_")
		}
		if err := runtime.ValidateSessionID(to); err != nil {
			return err
		}
		if _, err := s.host.Log().Session(ctx, to); err == nil {
			return &core.Rejection{Kind: core.RejectSessionExists, Message: fmt.Sprintf(
				"session %s already exists here; import with new ids (cairn import --new-ids) to keep both", to)}
		} else if !errors.Is(err, store.ErrSessionNotFound) {
			return err
		}
		im.to[as.ID] = to
		im.result.Sessions = append(im.result.Sessions, ImportedSession{From: as.ID, To: to})
	}
	if len(im.m.Workspaces) == 0 {
		return nil
	}
	files := s.host.Files()
	if files == nil {
		return unsupported("this server keeps no workspaces")
	}
	for _, aw := range im.m.Workspaces {
		ws, err := files.Workspace(ctx, aw.Name)
		switch {
		case errors.Is(err, store.ErrWorkspaceNotFound):
			im.created = append(im.created, aw)
			im.result.Workspaces = append(im.result.Workspaces, ImportedWorkspace{Name: aw.Name, Head: aw.Head})
		case err != nil:
			return err
		case ws.Head == aw.Head:
			im.result.Workspaces = append(im.result.Workspaces, ImportedWorkspace{Name: aw.Name, Head: aw.Head, Reused: true})
		default:
			return newError(CodeDomain, KindWorkspaceExists, fmt.Sprintf(
				"workspace %s already exists here at another head (%s, the archive has %s)", aw.Name, ws.Head, aw.Head))
		}
	}
	return nil
}

// pointSource is the session whose events in the archive pass the fork
// point of session i: its source, or, when the point lies in the prefix
// that source itself inherits, that source's source, and so on.
func (im *importing) pointSource(i int) int {
	at := im.m.Sessions[i].ForkOf.AtSeq
	src := im.index[im.m.Sessions[i].ForkOf.SessionID]
	for f := im.m.Sessions[src].ForkOf; f != nil && at <= f.AtSeq; f = im.m.Sessions[src].ForkOf {
		src = im.index[f.SessionID]
	}
	return src
}

// startLives sets each session's projection before its first archived
// event, and marks the seqs whose projection a fork starts from.
func (im *importing) startLives() {
	im.lives = make([]core.Lifecycle, len(im.m.Sessions))
	im.index = make(map[string]int, len(im.m.Sessions))
	for i, as := range im.m.Sessions {
		im.index[as.ID] = i
	}
	for i, as := range im.m.Sessions {
		if as.ForkOf != nil {
			src := im.pointSource(i)
			if im.forkPoints[src] == nil {
				im.forkPoints[src] = map[int64]core.Lifecycle{}
			}
			im.forkPoints[src][as.ForkOf.AtSeq] = core.Lifecycle{}
			if im.forkStates[src] == nil {
				im.forkStates[src] = map[int64][]byte{}
			}
		}
	}
}

// forkRequest is the fork an archived session with lineage becomes here;
// its source's projection at the fork point was taken as its events passed.
func (im *importing) forkRequest(i int) *store.ForkRequest {
	as := im.m.Sessions[i]
	if as.ForkOf == nil {
		return nil
	}
	src := im.pointSource(i)
	req := store.ForkRequest{SessionID: im.to[as.ID], Source: im.to[as.ForkOf.SessionID], AtSeq: as.ForkOf.AtSeq, AtMs: as.CreatedAtMs,
		Projection: im.forkPoints[src][as.ForkOf.AtSeq]}
	return &req
}

// addEvents checks a chunk's refs against the manifest (the reader checked
// their order), follows the session's projection, and spools the chunk for
// the commit.
func (im *importing) addEvents(e archive.Entry) error {
	as := im.m.Sessions[e.Session]
	if e.Chunk == 0 {
		im.state = core.NewState()
		if req := im.forkRequest(e.Session); req != nil {
			im.lives[e.Session] = store.ForkProjection(*req)
			st, err := core.DecodeCheckpoint(im.forkStates[im.pointSource(e.Session)][as.ForkOf.AtSeq])
			if err != nil {
				return err
			}
			im.state = st
		}
	}
	for _, ev := range e.Events {
		if err := applyUntrusted(im.state, ev); err != nil {
			return &archive.Error{Kind: archive.KindInvalid, Entry: e.Name, Message: fmt.Sprintf("session %s: %v", as.ID, err)}
		}
		refs, err := core.EventRefs(ev)
		if err != nil {
			return &archive.Error{Kind: archive.KindInvalid, Entry: e.Name, Message: fmt.Sprintf("session %s: %v", as.ID, err)}
		}
		for _, d := range refs {
			if !im.m.Holds(d) {
				return &archive.Error{Kind: archive.KindBlobMissing, Entry: e.Name, Message: fmt.Sprintf(
					"session %s event %d refers to %s, which the manifest does not list", as.ID, ev.Seq, d)}
			}
		}
		im.lives[e.Session] = store.Project(im.lives[e.Session], im.to[as.ID], []core.Event{ev})
		if points := im.forkPoints[e.Session]; points != nil {
			if _, ok := points[ev.Seq]; ok {
				points[ev.Seq] = im.lives[e.Session]
				cp, err := core.EncodeCheckpoint(im.state)
				if err != nil {
					return err
				}
				im.forkStates[e.Session][ev.Seq] = cp
			}
		}
	}
	return im.events.add(e)
}

// applyUntrusted folds an event from an archive into st: an event the
// core cannot apply, even one that would make it panic, is an error.
func applyUntrusted(st *core.State, ev core.Event) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("event %d (%s) does not apply", ev.Seq, ev.Kind)
		}
	}()
	return st.Apply(ev)
}

func missingBlobs(needed map[content.Digest]bool) error {
	var names []string
	for d := range needed {
		names = append(names, d.String())
	}
	slices.Sort(names)
	names = names[:min(len(names), 5)]
	return &archive.Error{Kind: archive.KindBlobMissing, Message: fmt.Sprintf(
		"%d blobs the manifest lists are neither in the archive nor here (%s…)", len(needed), strings.Join(names, ", "))}
}

// commitImport records the archive's edges, then creates its snapshots,
// workspaces and sessions in one transaction, the sessions in manifest
// order: a fork after its source, which it forks here at the same seq.
func (s call) commitImport(ctx context.Context, im *importing) error {
	files := s.host.Files()
	for _, e := range im.m.Edges {
		var err error
		if files != nil {
			err = files.PutEdges(ctx, e.Parent, e.Children)
		} else if ew, ok := s.host.Log().(store.EdgeWriter); ok {
			err = ew.PutEdges(ctx, e.Parent, e.Children)
		}
		if err != nil {
			return err
		}
	}
	sessions := make([]store.ImportedSession, len(im.m.Sessions))
	for i, as := range im.m.Sessions {
		sessions[i] = store.ImportedSession{SessionID: im.to[as.ID], Fork: im.forkRequest(i), Events: im.events.events(i)}
		if as.CloneOf != "" {
			sessions[i].CloneOf = im.to[as.CloneOf]
		}
	}
	b := store.ImportBatch{Sessions: sessions}
	if files != nil { // the same store as the log in every host
		b.Snapshots = im.m.Snapshots
		for _, aw := range im.created {
			b.Workspaces = append(b.Workspaces, store.Workspace{Name: aw.Name, Head: aw.Head})
		}
	}
	// All of it or none: a server that dies here leaves no half.
	err := s.host.Log().(store.Importer).Import(ctx, b)
	switch {
	case errors.Is(err, store.ErrSessionExists):
		return newError(CodeDomain, core.RejectSessionExists, "a session of the archive was created here while the import ran: "+err.Error())
	case errors.Is(err, store.ErrWorkspaceExists):
		return newError(CodeDomain, KindWorkspaceExists, "a workspace of the archive was created here while the import ran: "+err.Error())
	case errors.Is(err, store.ErrForkTooDeep):
		return newError(CodeDomain, KindForkTooDeep, err.Error())
	case errors.Is(err, store.ErrInvalidFork), errors.Is(err, store.ErrInvalidAppend), errors.Is(err, store.ErrInvalidWorkspace):
		return &archive.Error{Kind: archive.KindInvalid, Message: err.Error()}
	}
	return err
}
