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
	to      map[string]string       // archived session id → id here
	needed  map[content.Digest]bool // blobs the target lacked: the stream must bring them
	events  [][]core.Proposal
	result  ImportResult
	created []archive.Workspace // workspaces to create
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
	im := &importing{m: ar.Manifest, to: map[string]string{}, needed: map[content.Digest]bool{}, events: make([][]core.Proposal, len(ar.Manifest.Sessions))}
	if err := s.checkClashes(ctx, im, newIDs); err != nil {
		return ImportResult{}, err
	}
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
	return im.result, nil
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

// addEvents checks a chunk's refs against the manifest (the reader checked
// their order) and keeps them as proposals for the commit.
func (im *importing) addEvents(e archive.Entry) error {
	as := im.m.Sessions[e.Session]
	for _, ev := range e.Events {
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
		im.events[e.Session] = append(im.events[e.Session], core.Proposal{
			ObservedAtMs: ev.ObservedAtMs, Joins: ev.Joins, Kind: ev.Kind, Version: ev.Version, Payload: ev.Payload, Refs: refs})
	}
	return nil
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

// commitImport records the archive's edges and snapshots, creates its
// workspaces, then its sessions in manifest order: a fork after its
// source, which it forks here at the same seq.
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
	if files != nil {
		for _, d := range im.m.Snapshots {
			if _, err := files.PutSnapshot(ctx, d); err != nil {
				return err
			}
		}
		for _, aw := range im.created {
			if _, err := files.CreateWorkspace(ctx, aw.Name, aw.Head); err != nil {
				if errors.Is(err, store.ErrWorkspaceExists) {
					return newError(CodeDomain, KindWorkspaceExists, "workspace "+aw.Name+" was created here while the import ran")
				}
				return err
			}
		}
	}
	cat, _ := s.host.Log().(store.Catalog)
	for i, as := range im.m.Sessions {
		to := im.to[as.ID]
		after := int64(0)
		if as.ForkOf != nil {
			if cat == nil {
				return unsupported("this server's store cannot hold history forks")
			}
			src := im.to[as.ForkOf.SessionID]
			st, err := runtime.StateAt(ctx, s.host.Log(), s.anyCheckpoints(), s.host.Blobs(), src, as.ForkOf.AtSeq)
			if err != nil {
				return err
			}
			req := store.ForkRequest{SessionID: to, Source: src, AtSeq: as.ForkOf.AtSeq, AtMs: as.CreatedAtMs, Projection: store.ProjectionOf(st)}
			req.Projection.Title = as.Title
			if _, err := cat.Fork(ctx, req); err != nil {
				return catalogError(err)
			}
			after = as.ForkOf.AtSeq
		}
		if _, err := s.host.Log().Append(ctx, to, after, im.events[i]); err != nil {
			var conflict *store.HeadConflictError
			if errors.As(err, &conflict) {
				return runtime.SessionExists(to)
			}
			return err
		}
		if as.CloneOf != "" && cat != nil {
			if err := cat.RecordClone(ctx, to, im.to[as.CloneOf]); err != nil {
				return err
			}
		}
	}
	return nil
}
