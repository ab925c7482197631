package environment

import (
	"os"
	"os/exec"
	"slices"
)

// GoBuild is `go build args...` in dir as the image builds the binaries (hack/image.sh): static
// (CGO_ENABLED=0) and with paths trimmed. Built so, the binaries the tests run share every
// compiled package with the image's build, `make verify` and the tests `make` runs, rather than
// compiling all of them once more; and a tree in another directory (an older commit's) shares
// this one's compiled packages, its own among them, which without -trimpath are keyed by their
// directory.
func GoBuild(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", slices.Concat([]string{"build", "-trimpath"}, args)...) //nolint:gosec // G204: go itself, building this repository.
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	return cmd
}
