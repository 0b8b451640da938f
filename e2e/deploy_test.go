package e2e

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The Dockerfile's build stage, run as a script on a copy of the
// repository (or by Docker or Podman where one is installed): it gives a
// static binary that runs, and the image it goes into runs it as a
// non-root user from a base with CA certificates.
func TestDockerfileBuildsAStaticBinary(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	for _, want := range []string{"FROM gcr.io/distroless/static", "USER nonroot", "COPY --from=build /out/cairn /usr/local/bin/cairn", `ENTRYPOINT ["/usr/local/bin/cairn"]`} {
		if !strings.Contains(text, want) {
			t.Errorf("the Dockerfile lacks %q", want)
		}
	}
	for _, tool := range []string{"docker", "podman"} {
		// A tool whose daemon answers (a client alone cannot build).
		if err := exec.Command(tool, "info").Run(); err == nil {
			out, err := exec.Command(tool, "build", "-t", "cairn:test", "..").CombinedOutput()
			if err != nil {
				t.Fatalf("%s build: %v\n%s", tool, err, out)
			}
			return
		}
	}
	// No container tool that works: the build stage's steps, in order, on a copy of
	// the tracked files, with /out in a temporary directory.
	src, out := t.TempDir(), t.TempDir()
	files, err := exec.Command("git", "-C", "..", "ls-files").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(files)) {
		b, err := os.ReadFile(filepath.Join("..", f))
		if err != nil {
			continue // deleted in the work tree
		}
		if err := os.MkdirAll(filepath.Join(src, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stages := strings.Split(text, "\nFROM ")
	if len(stages) != 3 {
		t.Fatalf("want a build stage and an image stage, have %d stages", len(stages)-1)
	}
	build := stages[1]
	sc := bufio.NewScanner(strings.NewReader(build))
	ran := 0
	for sc.Scan() {
		step, ok := strings.CutPrefix(sc.Text(), "RUN ")
		if !ok {
			continue
		}
		cmd := exec.Command("sh", "-c", strings.ReplaceAll(step, "/out/", out+"/"))
		cmd.Dir = src
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("RUN %s: %v\n%s", step, err, b)
		}
		ran++
	}
	bin := filepath.Join(out, "cairn")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("%d steps ran; the binary: %v", ran, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the binary is dynamically linked: distroless/static cannot run it")
		}
	}
	if b, err := exec.Command(bin, "version").CombinedOutput(); err != nil || !strings.HasPrefix(string(b), "cairn ") {
		t.Fatalf("the built binary: %v %s", err, b)
	}
}

// deploy/compose.yaml runs PostgreSQL, an S3-compatible server, Temporal,
// `cairn migrate` once, the gateway and two workers, and every flag and
// CAIRN_ variable it gives cairn is one cairn knows.
func TestComposeFileRunsTheHostedStack(t *testing.T) {
	data, err := os.ReadFile("../deploy/compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	var cairnCommands []string
	for _, name := range []string{"postgres", "minio", "temporal", "migrate", "gateway", "worker-1", "worker-2"} {
		s, ok := c.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		if s.Image != "cairn:local" {
			continue
		}
		if len(s.Command) == 0 {
			t.Fatalf("%s: no command", name)
		}
		cairnCommands = append(cairnCommands, s.Command[0])
		help, err := exec.Command(cairnBin, s.Command[0], "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("cairn %s --help: %v", s.Command[0], err)
		}
		for _, arg := range s.Command[1:] {
			if flag, ok := strings.CutPrefix(arg, "--"); ok && !strings.Contains(string(help), "--"+flag+" ") {
				t.Errorf("%s: cairn %s has no flag --%s", name, s.Command[0], flag)
			}
		}
		if s.Command[0] == "migrate" {
			continue
		}
		for k := range s.Environment {
			if strings.HasPrefix(k, "CAIRN_") && !regexp.MustCompile(`env `+k+`\b`).Match(help) {
				t.Errorf("%s: cairn %s reads no %s", name, s.Command[0], k)
			}
		}
	}
	if !slices.Equal(cairnCommands, []string{"migrate", "serve", "worker", "worker"}) {
		t.Fatalf("cairn services run %v", cairnCommands)
	}
}
