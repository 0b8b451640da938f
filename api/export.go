package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/cairn-agents/cairn/archive"
	"github.com/cairn-agents/cairn/content"
	"github.com/cairn-agents/cairn/core"
	"github.com/cairn-agents/cairn/runtime"
	"github.com/cairn-agents/cairn/store"
)

// ExportPath streams an archive (POST, a JSON ExportParams body); it is
// served beside /rpc with the same authentication and protection.
const ExportPath = "/export"

// ArchiveMediaType is the media type of an archive, on export's answer and
// import's request.
const ArchiveMediaType = "application/vnd.cairn.archive+zstd"

// exportStatusTrailer ends a whole export: a stream without it was cut.
const exportStatusTrailer = "Cairn-Export-Status"

// ExportParams select what an export holds: the sessions and workspaces
// named, with the workspaces the sessions link. With neither, the whole
// universe: every session, fork and workspace.
type ExportParams struct {
	Sessions   []string `json:"sessions,omitempty"`
	Workspaces []string `json:"workspaces,omitempty"`
}

// maxExportParamsBytes bounds an export request body.
const maxExportParamsBytes = 1 << 20

func (s *Server) serveExport(w http.ResponseWriter, r *http.Request) {
	host, ok := s.archiveHost(w, r, "application/json")
	if !ok {
		return
	}
	var p ExportParams
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxExportParamsBytes))
	if err == nil && len(body) > 0 {
		err = json.Unmarshal(body, &p)
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, Response{JSONRPC: "2.0", ID: nullID, Error: newError(CodeInvalidParams, KindInvalidParams, "the body must be export parameters: "+err.Error())})
		return
	}
	c := call{Server: s, host: host}
	plan, err := c.planExport(r.Context(), p)
	if err != nil {
		e := s.toRPCError("export", err)
		writeJSON(w, streamStatus(e), Response{JSONRPC: "2.0", ID: nullID, Error: e})
		return
	}
	h := w.Header()
	h.Set("Content-Type", ArchiveMediaType)
	h.Set("Cache-Control", "no-store")
	h.Set("Trailer", exportStatusTrailer)
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush() // the answer has begun: a failure from here on cuts it
	}
	if err := c.writeArchive(r.Context(), w, plan); err != nil {
		// The answer has begun: cut it, so the client sees a stream
		// without its trailer rather than a short archive.
		s.log.Error("export failed", "err", err)
		panic(http.ErrAbortHandler)
	}
	h.Set(exportStatusTrailer, "complete")
}

// archiveHost authenticates an archive request and checks its media type
// (a type a page of another origin cannot send without asking first).
func (s *Server) archiveHost(w http.ResponseWriter, r *http.Request, mediaType string) (Host, bool) {
	if ct := r.Header.Get("Content-Type"); !sameMediaType(ct, mediaType) {
		writeRefusal(w, http.StatusUnsupportedMediaType, KindUnsupportedMediaType, "send the request with Content-Type: "+mediaType)
		return nil, false
	}
	host, err := s.hosts.HostFor(r.Context(), BearerToken(r))
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cairn"`)
		writeRefusal(w, http.StatusUnauthorized, KindUnauthorized, "a valid API key is required: send Authorization: Bearer KEY")
		return nil, false
	}
	return host, true
}

// planExport is the manifest of an export: it pins each selected session
// at its head now, and collects every blob the sessions and workspaces
// reach through the retention graph's edges.
func (s call) planExport(ctx context.Context, p ExportParams) (archive.Manifest, error) {
	log := s.host.Log()
	edges, ok := log.(store.Edges)
	if !ok {
		return archive.Manifest{}, unsupported("this server's store cannot export")
	}
	cat, _ := log.(store.Catalog)
	files := s.host.Files()
	ids, names := p.Sessions, p.Workspaces
	if len(ids) == 0 && len(names) == 0 {
		var err error
		if ids, err = allSessions(ctx, log); err != nil {
			return archive.Manifest{}, err
		}
		if names, err = allWorkspaces(ctx, files); err != nil {
			return archive.Manifest{}, err
		}
	}
	r := reach{edges: edges, seen: map[content.Digest]bool{}}
	selected := map[string]bool{}
	for _, id := range ids {
		selected[id] = true
	}
	sessions := map[string]archive.Session{}
	wanted := slices.Clone(names)
	var snapshots []content.Digest
	for _, id := range ids {
		life, err := log.Session(ctx, id)
		if err != nil {
			return archive.Manifest{}, err
		}
		as := archive.Session{ID: id, Head: life.Head, Title: life.Title, CreatedAtMs: life.CreatedAtMs}
		if cat != nil {
			src, err := cat.Source(ctx, id)
			if err != nil {
				return archive.Manifest{}, err
			}
			switch {
			case src == nil || !selected[src.SessionID]:
			case src.AtSeq > 0:
				as.ForkOf = src
			default:
				as.CloneOf = src.SessionID
			}
		}
		st, err := runtime.StateAt(ctx, log, s.anyCheckpoints(), s.host.Blobs(), id, life.Head)
		if err != nil {
			return archive.Manifest{}, err
		}
		as.Model, as.Tools = st.Config.Model, st.Config.Tools
		for _, l := range st.Config.Links {
			if l.Workspace != "" {
				wanted = append(wanted, l.Workspace)
			}
			if d := l.HeldRefs(); len(d) > 0 {
				snapshots = append(snapshots, d...)
			}
		}
		err = eachEvent(ctx, log, as, func(evs []core.Event) error {
			for _, ev := range evs {
				refs, err := core.EventRefs(ev)
				if err != nil {
					return fmt.Errorf("session %s: %w", id, err)
				}
				r.add(refs...)
			}
			return nil
		})
		if err != nil {
			return archive.Manifest{}, err
		}
		sessions[id] = as
	}
	var m archive.Manifest
	slices.Sort(wanted)
	for _, name := range slices.Compact(wanted) {
		if files == nil {
			return archive.Manifest{}, unsupported("this server keeps no workspaces")
		}
		ws, err := files.Workspace(ctx, name)
		if errors.Is(err, store.ErrWorkspaceNotFound) {
			return archive.Manifest{}, newError(CodeDomain, KindNotFound, "workspace "+name+" not found")
		}
		if err != nil {
			return archive.Manifest{}, err
		}
		m.Workspaces = append(m.Workspaces, archive.Workspace{Name: name, Head: ws.Head})
		r.add(ws.Head)
	}
	r.add(snapshots...)
	if err := r.close(ctx); err != nil {
		return archive.Manifest{}, err
	}
	m.Blobs, m.Edges = r.blobs(), r.found
	content.SortDigests(snapshots)
	m.Snapshots = slices.Compact(snapshots)
	m.Sessions = lineageOrder(ids, sessions)
	m.CreatedAtMs = s.host.NowMs()
	return m, nil
}

// lineageOrder lists the sessions of ids with each after the session it
// forks or clones.
func lineageOrder(ids []string, sessions map[string]archive.Session) []archive.Session {
	var out []archive.Session
	done := map[string]bool{}
	var visit func(id string)
	visit = func(id string) {
		if done[id] {
			return
		}
		done[id] = true
		s := sessions[id]
		if s.ForkOf != nil {
			visit(s.ForkOf.SessionID)
		}
		if s.CloneOf != "" {
			visit(s.CloneOf)
		}
		out = append(out, s)
	}
	for _, id := range ids {
		visit(id)
	}
	return out
}

// eachEvent reads the events of an archived session, from its first to
// its head, a page at a time.
func eachEvent(ctx context.Context, log store.SessionLog, s archive.Session, fn func([]core.Event) error) error {
	const page = 1000
	for after := s.First() - 1; after < s.Head; {
		evs, err := log.ReadAfter(ctx, s.ID, after, int(min(page, s.Head-after)))
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			return fmt.Errorf("%w: session %s ends at %d, before %d", runtime.ErrHistoryIncomplete, s.ID, after, s.Head)
		}
		if err := fn(evs); err != nil {
			return err
		}
		after = evs[len(evs)-1].Seq
	}
	return nil
}

// writeArchive writes the planned archive to w: blobs read one at a time,
// events a page at a time, so memory stays bounded whatever its size.
func (s call) writeArchive(ctx context.Context, w io.Writer, m archive.Manifest) error {
	aw, err := archive.NewWriter(w, m)
	if err != nil {
		return err
	}
	for _, d := range m.Blobs {
		data, err := s.host.Blobs().Get(ctx, d)
		if err != nil {
			return err
		}
		if err := aw.Blob(d, data); err != nil {
			return err
		}
	}
	for i, as := range m.Sessions {
		if err := eachEvent(ctx, s.host.Log(), as, func(evs []core.Event) error { return aw.Events(i, evs) }); err != nil {
			return err
		}
	}
	return aw.Close()
}

func allSessions(ctx context.Context, log store.SessionLog) ([]string, error) {
	var ids []string
	for after := ""; ; {
		page, err := log.Sessions(ctx, after, 1000)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			return ids, nil
		}
		for _, l := range page {
			ids = append(ids, l.SessionID)
		}
		after = page[len(page)-1].SessionID
	}
}

func allWorkspaces(ctx context.Context, files runtime.Files) ([]string, error) {
	if files == nil {
		return nil, nil
	}
	var names []string
	for after := ""; ; {
		page, err := files.Workspaces(ctx, after, 1000)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			return names, nil
		}
		for _, w := range page {
			names = append(names, w.Name)
		}
		after = page[len(page)-1].Name
	}
}

// reach is the closure of a set of blobs under the retention graph's
// edges, with the edges it followed.
type reach struct {
	edges store.Edges
	seen  map[content.Digest]bool
	queue []content.Digest
	found []archive.Edge
}

func (r *reach) add(ds ...content.Digest) {
	for _, d := range ds {
		if !r.seen[d] {
			r.seen[d] = true
			r.queue = append(r.queue, d)
		}
	}
}

// close follows every edge from the blobs added.
func (r *reach) close(ctx context.Context) error {
	for len(r.queue) > 0 {
		d := r.queue[len(r.queue)-1]
		r.queue = r.queue[:len(r.queue)-1]
		kids, err := r.edges.Children(ctx, d)
		if err != nil {
			return err
		}
		if len(kids) > 0 {
			r.found = append(r.found, archive.Edge{Parent: d, Children: kids})
			r.add(kids...)
		}
	}
	slices.SortFunc(r.found, func(a, b archive.Edge) int { return compareDigest(a.Parent, b.Parent) })
	return nil
}

func (r *reach) blobs() []content.Digest {
	out := make([]content.Digest, 0, len(r.seen))
	for d := range r.seen {
		out = append(out, d)
	}
	content.SortDigests(out)
	return out
}

func compareDigest(a, b content.Digest) int { return bytes.Compare(a[:], b[:]) }
