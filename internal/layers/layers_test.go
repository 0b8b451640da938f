package layers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/cairn-agents/cairn"

// row is one row of the package table: the packages it covers (a path, or
// "path/..." for it and everything below), the rows it may import by their
// first package, and the third-party module paths it may import. A row may
// also import whatever the rows it may import may, so "runtime/local may
// import runtime" lets it name core too; and it may import its own row's
// packages (provider/chat uses provider/endpoint).
type row struct {
	pkgs     []string
	may      []string
	external []string
}

// above in a may list stands for every row above this one.
const above = "(all of the above)"

// table is DESIGN.md's package table, top to bottom: arrows point down it,
// never up. Where the code has a package the design's table does not name,
// or an arrow the table leaves out, the row says so and why; change both
// this and DESIGN.md together.
var table = []row{
	{pkgs: []string{"content"}},
	{pkgs: []string{"core"}, may: []string{"content"}},
	{pkgs: []string{"blob"}, may: []string{"content"}},
	// Listed after the stores in DESIGN.md, but the stores keep large blob
	// bodies in it (DESIGN.md, "Storage"), so it sits above them.
	{pkgs: []string{"objstore"}, external: []string{"github.com/minio/minio-go/"}},
	// Not in DESIGN.md's table: the session-log, checkpoint and catalog
	// interfaces every store implements and the hosts use.
	{pkgs: []string{"store"}, may: []string{"core", "blob", "content"}},
	// zstd: SQLite, unlike PostgreSQL, does not compress stored values.
	{pkgs: []string{"store/sqlite"}, may: []string{"core", "blob", "content", "store", "objstore"}, external: []string{"modernc.org/sqlite", "github.com/klauspost/compress/zstd"}},
	{pkgs: []string{"store/postgres"}, may: []string{"core", "blob", "content", "store", "objstore"}, external: []string{"github.com/jackc/pgx/"}},
	// Not in DESIGN.md's table: the session archive (issue 23), a format
	// over events and blobs that export and import read and write.
	{pkgs: []string{"archive"}, may: []string{"core", "content", "store"}, external: []string{"github.com/klauspost/compress/zstd"}},
	{pkgs: []string{"provider/..."}, may: []string{"core", "blob", "content"}},
	{pkgs: []string{"vfs"}, may: []string{"blob", "content"}, external: []string{"github.com/go-git/go-git/"}},
	{pkgs: []string{"assembly"}, may: []string{"vfs", "blob"}, external: []string{"go.yaml.in/yaml/"}},
	{pkgs: []string{"runtime"}, may: []string{above}},
	{pkgs: []string{"runtime/local"}, may: []string{"runtime"}},
	{pkgs: []string{"runtime/temporal"}, may: []string{"runtime"}, external: []string{"go.temporal.io/"}},
	// Not in DESIGN.md's table: MCP servers as tool sources (issue 19),
	// implementing runtime.MCPServers over the official SDK; the binary
	// wires it into both hosts.
	{pkgs: []string{"mcptools"}, may: []string{"runtime"}, external: []string{"github.com/modelcontextprotocol/go-sdk/"}},
	{pkgs: []string{"retention"}, may: []string{"blob", "store", "store/sqlite", "store/postgres"}},
	// DESIGN.md lists core, blob and providers; session reads also load
	// state the way the hosts do (runtime: checkpoint + tail, and its
	// history_incomplete error).
	{pkgs: []string{"view"}, may: []string{"core", "blob", "provider/...", "runtime"}},
	// retention beyond DESIGN.md's list: the admin methods (storage
	// report, collection) call the collector. jsonschema-go infers the
	// methods' schemas for the OpenRPC document from their Go types.
	{pkgs: []string{"api"}, may: []string{"view", "runtime", "retention", "archive"}, external: []string{"github.com/go-json-experiment/json", "github.com/santhosh-tekuri/jsonschema/", "github.com/google/jsonschema-go/"}},
	{pkgs: []string{"web"}},
	// Not in DESIGN.md's table: the Prometheus surface (issue 21), a
	// runtime.Observer that the binary hands both hosts.
	{pkgs: []string{"metrics"}, may: []string{"core", "runtime", "retention"}, external: []string{"github.com/prometheus/client_golang/"}},
	// Not in DESIGN.md's table: OpenTelemetry traces (issue 21), another
	// runtime.Observer.
	{pkgs: []string{"tracing"}, may: []string{"core", "runtime"}, external: []string{"go.opentelemetry.io/otel"}},
	// The one binary wires stores, hosts and the API together.
	{pkgs: []string{"cmd/cairn"}, may: []string{above}, external: []string{"github.com/spf13/cobra"}},
	// Not in DESIGN.md's table: conformance suites, test environments and
	// the end-to-end tests. Nothing above may import them; they may import
	// anything ("" prefixes every path).
	{pkgs: []string{"blob/blobtest", "objstore/objstoretest", "store/storetest", "internal/...", "e2e"}, may: []string{above}, external: []string{""}},
}

// pkg is what the check needs of `go list -json`.
type pkg struct {
	ImportPath string
	Imports    []string
	Standard   bool
}

// TestImportBoundaries checks every package of the module against the
// table: it must be in it, and import only what its row may.
func TestImportBoundaries(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-json", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs, err := decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; the module has more", len(pkgs))
	}
	for _, problem := range check(table, pkgs) {
		t.Error(problem)
	}
}

// TestCheckFindsWrongArrows proves the check can fail: an arrow up the
// table, a third-party import a row does not allow, a package the table
// does not know, a row that names a row below it.
func TestCheckFindsWrongArrows(t *testing.T) {
	std := pkg{ImportPath: "fmt", Standard: true}
	cases := []struct {
		name  string
		table []row
		pkgs  []pkg
		want  string
	}{
		{"upward import", table, []pkg{std, {ImportPath: module + "/core", Imports: []string{"fmt", module + "/runtime"}}},
			"core imports runtime"},
		{"sideways import", table, []pkg{{ImportPath: module + "/runtime/temporal", Imports: []string{module + "/runtime/local"}}},
			"runtime/temporal imports runtime/local"},
		{"third party", table, []pkg{{ImportPath: module + "/core", Imports: []string{"go.temporal.io/sdk/workflow"}}},
			"core imports go.temporal.io/sdk/workflow"},
		{"unknown package", table, []pkg{{ImportPath: module + "/runtime/shiny"}},
			"runtime/shiny is not in the package table"},
		{"table points up", []row{{pkgs: []string{"content"}, may: []string{"core"}}, {pkgs: []string{"core"}}}, nil,
			"row content may import core, which is not above it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := check(c.table, c.pkgs)
			if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, c.want) }) {
				t.Errorf("check found %q, want a problem containing %q", got, c.want)
			}
		})
	}
	if got := check(table, []pkg{std, {ImportPath: module + "/runtime/local", Imports: []string{"fmt", module + "/core", module + "/runtime"}}}); len(got) != 0 {
		t.Errorf("a downward import was refused: %q", got)
	}
}

// check returns every way pkgs break the table, in a stable order.
func check(table []row, pkgs []pkg) []string {
	var problems []string
	index := map[string]int{} // a row's name (its first package) to its place
	for i, r := range table {
		index[r.pkgs[0]] = i
	}
	for i, r := range table {
		for _, m := range r.may {
			if j, ok := index[m]; m != above && (!ok || j >= i) {
				problems = append(problems, fmt.Sprintf("row %s may import %s, which is not above it in the table", r.pkgs[0], m))
			}
		}
	}
	std := map[string]bool{}
	for _, p := range pkgs {
		std[p.ImportPath] = std[p.ImportPath] || p.Standard
	}
	for _, p := range pkgs {
		rel, ours := strings.CutPrefix(p.ImportPath, module+"/")
		if p.Standard || !ours {
			continue
		}
		i := rowOf(table, rel)
		if i < 0 {
			problems = append(problems, fmt.Sprintf("%s is not in the package table: add it to DESIGN.md's table and to internal/layers", rel))
			continue
		}
		rows, external := reach(table, i)
		for _, imp := range p.Imports {
			if to, ours := strings.CutPrefix(imp, module+"/"); ours {
				if j := rowOf(table, to); j < 0 || !rows[j] {
					problems = append(problems, fmt.Sprintf("%s imports %s, which its row of the package table may not", rel, to))
				}
				continue
			}
			if !std[imp] && !slices.ContainsFunc(external, func(prefix string) bool { return strings.HasPrefix(imp, prefix) }) {
				problems = append(problems, fmt.Sprintf("%s imports %s, which its row of the package table may not", rel, imp))
			}
		}
	}
	slices.Sort(problems)
	return slices.Compact(problems)
}

// rowOf returns the place in the table of the row covering path, or -1.
func rowOf(table []row, path string) int {
	for i, r := range table {
		for _, p := range r.pkgs {
			if base, tree := strings.CutSuffix(p, "/..."); path == p || tree && (path == base || strings.HasPrefix(path, base+"/")) {
				return i
			}
		}
	}
	return -1
}

// reach returns the rows row i may import, itself included, and the
// third-party paths they allow, following may lists down to the top.
func reach(table []row, i int) (map[int]bool, []string) {
	rows := map[int]bool{}
	var external []string
	var visit func(int)
	visit = func(i int) {
		if rows[i] {
			return
		}
		rows[i] = true
		external = append(external, table[i].external...)
		for _, m := range table[i].may {
			if m == above {
				for j := range i {
					visit(j)
				}
			} else if j := rowOf(table, m); j >= 0 && j < i {
				visit(j)
			}
		}
	}
	visit(i)
	return rows, external
}

// decode reads the stream of JSON objects `go list -json` prints.
func decode(out []byte) ([]pkg, error) {
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("decoding go list: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}
