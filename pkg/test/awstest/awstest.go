// Package awstest serves the project's AWS emulator (test/awsemulator) to tests.
package awstest

import (
	"net/http/httptest"
	"testing"

	"karpenter.sh/karpenter/test/awsemulator"
)

// Serve serves a new emulator with opts, seeded from seedYAML (nothing when empty), on a
// loopback HTTP server that closes when the test ends.
func Serve(t testing.TB, opts awsemulator.Options, seedYAML string) (*awsemulator.Emulator, *httptest.Server) {
	t.Helper()
	emulator := awsemulator.New(opts)
	if seedYAML != "" {
		seed, err := awsemulator.ParseSeed([]byte(seedYAML))
		if err != nil {
			t.Fatal(err)
		}
		if err := emulator.Seed(seed); err != nil {
			t.Fatal(err)
		}
	}
	server := httptest.NewServer(emulator)
	t.Cleanup(server.Close)
	return emulator, server
}
