package environment

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// RepositoryRoot is the nearest directory at or above the working directory holding a go.mod;
// `go test` runs each package in its own directory, so this is the module root.
func RepositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("getting the working directory, %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod at or above the working directory")
		}
		dir = parent
	}
}

// binaries locates the executables the environment runs.
type binaries struct {
	root string
}

// projectBinary is a binary `make test-assets` builds into bin/ at a pinned version; only that
// copy is used, never another version found on PATH.
func (b binaries) projectBinary(name string) (string, error) {
	path := filepath.Join(b.root, "bin", name)
	if err := checkExecutable(path); err != nil {
		return "", fmt.Errorf("%s: %w; run `make test-assets` to install it", name, err)
	}
	return path, nil
}

// systemBinary is a binary installed from a distribution package: bin/ first, then PATH.
func (b binaries) systemBinary(name string) (string, error) {
	if path := filepath.Join(b.root, "bin", name); checkExecutable(path) == nil {
		return path, nil
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s is neither in %s nor on PATH; run `make test-assets` to install it",
			name, filepath.Join(b.root, "bin"))
	}
	return path, nil
}

func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", path)
	}
	return nil
}
