package scheduling

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// keyBuilder renders a sequence of values into a map key. Every string is written with its
// length first, so two different sequences never render alike whatever their strings hold,
// and nothing is quoted or formatted: pods are keyed by the thousand in a pass. Each method
// returns the key extended, as append does, so that a key built in a stack buffer stays there.
type keyBuilder []byte

func (b keyBuilder) str(s string) keyBuilder {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	return append(b, s...)
}

func (b keyBuilder) int(i int64) keyBuilder {
	b = strconv.AppendInt(b, i, 10)
	return append(b, ';')
}

func (b keyBuilder) bool(v bool) keyBuilder {
	if v {
		return append(b, 't')
	}
	return append(b, 'f')
}

// labels writes the map's size, then its entries in key order.
func (b keyBuilder) labels(m map[string]string) keyBuilder {
	b = b.int(int64(len(m)))
	if len(m) == 1 {
		for k, v := range m {
			b = b.str(k).str(v)
		}
		return b
	}
	var scratch [8]string
	keys := scratch[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = b.str(k).str(m[k])
	}
	return b
}

// labelKeys writes, for each of keys the pod has a label of, the key and the pod's value: what
// matchLabelKeys and mismatchLabelKeys add to a term's selector.
func (b keyBuilder) labelKeys(pod *corev1.Pod, keys []string) keyBuilder {
	b = b.int(int64(len(keys)))
	for _, key := range keys {
		if value, ok := pod.Labels[key]; ok {
			b = b.str(key).str(value)
		} else {
			b = b.int(-1)
		}
	}
	return b
}

// selector writes a label selector so that equal selectors write alike, nil and empty apart.
func (b keyBuilder) selector(ls *metav1.LabelSelector) keyBuilder {
	if ls == nil {
		return b.int(-1)
	}
	b = b.labels(ls.MatchLabels).int(int64(len(ls.MatchExpressions)))
	for _, e := range ls.MatchExpressions {
		b = b.str(e.Key).str(string(e.Operator)).int(int64(len(e.Values)))
		for _, v := range e.Values {
			b = b.str(v)
		}
	}
	return b
}
