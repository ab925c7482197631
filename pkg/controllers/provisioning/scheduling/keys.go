package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	"slices"
	"strconv"
)

// keyBuilder renders a sequence of values into a map key. Every string is written with its
// length first, so two different sequences never render alike whatever their strings hold,
// and nothing is quoted or formatted: pods are keyed by the thousand in a pass.
type keyBuilder []byte

func (b *keyBuilder) str(s string) {
	*b = strconv.AppendInt(*b, int64(len(s)), 10)
	*b = append(*b, ':')
	*b = append(*b, s...)
}

func (b *keyBuilder) int(i int64) {
	*b = strconv.AppendInt(*b, i, 10)
	*b = append(*b, ';')
}

func (b *keyBuilder) bool(v bool) {
	if v {
		*b = append(*b, 't')
	} else {
		*b = append(*b, 'f')
	}
}

// labels writes the map's size, then its entries in key order.
func (b *keyBuilder) labels(m map[string]string) {
	b.int(int64(len(m)))
	if len(m) == 1 {
		for k, v := range m {
			b.str(k)
			b.str(v)
		}
		return
	}
	var scratch [8]string
	keys := scratch[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.str(k)
		b.str(m[k])
	}
}

// labelKeys writes, for each of keys the pod has a label of, the key and the pod's value: what
// matchLabelKeys and mismatchLabelKeys add to a term's selector.
func (b *keyBuilder) labelKeys(pod *corev1.Pod, keys []string) {
	b.int(int64(len(keys)))
	for _, key := range keys {
		if value, ok := pod.Labels[key]; ok {
			b.str(key)
			b.str(value)
		} else {
			b.int(-1)
		}
	}
}

func (b keyBuilder) String() string { return string(b) }
