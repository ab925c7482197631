package operator

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestProfilingHandlers(t *testing.T) {
	if handlers := profilingHandlers(false); handlers != nil {
		t.Errorf("profiling off serves %v, want nothing", handlers)
	}
	mux := http.NewServeMux()
	for path, handler := range profilingHandlers(true) {
		mux.Handle(path, handler)
	}
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/heap", "/debug/pprof/goroutine", "/debug/pprof/cmdline"} {
		recorder := httptest.NewRecorder()
		mux.ServeHTTP(recorder, httptest.NewRequest(http.MethodGet, path, nil))
		if recorder.Code != http.StatusOK {
			t.Errorf("GET %s: %d, want 200", path, recorder.Code)
		}
	}
}
