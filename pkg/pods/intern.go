package pods

import (
	"encoding/binary"
	"runtime"
	"slices"
	"sync"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
)

// Shared holds one copy of each distinct part of the cached pods that a workload's pods carry
// alike: a Deployment's or a Job's pods have the same containers (as trimmed), tolerations,
// affinity and spread constraints, so the cache keeps one of each instead of one per pod. What
// a cached pod references may then be another pod's too: the cache's objects are read-only, and
// a shared slice's capacity is its length, so that an append copies rather than writes into it.
var shared = struct {
	containers  internTable[corev1.Container]
	tolerations internTable[corev1.Toleration]
	spreads     internTable[corev1.TopologySpreadConstraint]
	affinities  internTable[corev1.Affinity]
}{}

// share points the pod's shareable parts at the copies other cached pods already hold.
func share(pod *corev1.Pod) {
	pod.Spec.Containers = shared.containers.slice(pod.Spec.Containers)
	pod.Spec.InitContainers = shared.containers.slice(pod.Spec.InitContainers)
	pod.Spec.Tolerations = shared.tolerations.slice(pod.Spec.Tolerations)
	pod.Spec.TopologySpreadConstraints = shared.spreads.slice(pod.Spec.TopologySpreadConstraints)
	if pod.Spec.Affinity != nil {
		pod.Spec.Affinity = shared.affinities.one(pod.Spec.Affinity)
	}
}

// internTable finds values by their protobuf encoding — equal encodings are equal values, as
// the API server serves them — and holds them weakly: once no pod of the cache references a
// value, the collector frees it and its entry goes, so the table never outgrows the cache.
type internTable[T any] struct {
	mu     sync.Mutex
	values map[string]weak.Pointer[T] // a value's first element
}

// slice returns the live slice held equal to s, or holds s.
func (t *internTable[T]) slice(s []T) []T {
	if len(s) == 0 {
		return s
	}
	key := keys.Get().(*[]byte)
	defer keys.Put(key)
	var ok bool
	if *key, ok = encode((*key)[:0], s); !ok {
		return s
	}
	first := t.intern(*key, &s[0])
	// The held slice's elements are the len(s) values from first on: the weak pointer was made
	// from its first element and the backing array holds the rest.
	return unsafe.Slice(first, len(s)) //nolint:gosec // G103: first is the first of len(s) elements of one backing array
}

// one returns the live value held equal to v, or holds v.
func (t *internTable[T]) one(v *T) *T {
	return &t.slice(unsafe.Slice(v, 1))[0] //nolint:gosec // G103: a value is a slice of one
}

// intern returns the first element of the live value held under key, or holds first's.
func (t *internTable[T]) intern(key []byte, first *T) *T {
	t.mu.Lock()
	defer t.mu.Unlock()
	// A lookup by string(key) does not copy key; only a value held anew does.
	if value := t.values[string(key)].Value(); value != nil {
		return value
	}
	if t.values == nil {
		t.values = map[string]weak.Pointer[T]{}
	}
	held, heldKey := weak.Make(first), string(key)
	t.values[heldKey] = held
	runtime.AddCleanup(first, t.forget, internedKey[T]{key: heldKey, first: held})
	return first
}

// internedKey names an entry for its cleanup; weak pointers compare equal only when made from
// the same pointer, so a cleanup never removes a newer entry under the same key.
type internedKey[T any] struct {
	key   string
	first weak.Pointer[T]
}

func (t *internTable[T]) forget(entry internedKey[T]) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if held, ok := t.values[entry.key]; ok && held == entry.first {
		delete(t.values, entry.key)
	}
}

// keys are the buffers the transform encodes its keys into, reused: informers transform every
// pod event, most of them of pods whose parts are held already.
var keys = sync.Pool{New: func() any { return new([]byte) }}

// encodable is a generated API type's protobuf encoding.
type encodable interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// encode appends the elements' protobuf encodings to key, each prefixed by its length
// (encodings of consecutive messages would otherwise merge). False for a type with no
// encoding, or a value that fails to encode.
func encode[T any](key []byte, s []T) ([]byte, bool) {
	for i := range s {
		message, ok := any(&s[i]).(encodable)
		if !ok {
			return key, false
		}
		size := message.Size()
		key = binary.AppendVarint(key, int64(size))
		start := len(key)
		key = slices.Grow(key, size)[:start+size]
		if _, err := message.MarshalToSizedBuffer(key[start:]); err != nil {
			return key, false
		}
	}
	return key, true
}
