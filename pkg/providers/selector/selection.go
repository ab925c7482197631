package selector

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/utils/clock"
)

// How long a selection is kept: a resource the user tags is seen within a minute. selectionsKept
// bounds the selections kept.
const (
	selectionTTL   = time.Minute
	selectionsKept = 1000
)

// Selections keeps what selector terms selected, by the terms, for a minute: the one mechanism
// behind every provider that lists EC2 resources by terms.
type Selections[T any] struct {
	fields Fields
	id     func(T) string
	cache  *cache.LRUExpireCache
}

// NewSelections keeps the selections of resources with fields, told apart by id.
func NewSelections[T any](fields Fields, id func(T) string, clk clock.PassiveClock) *Selections[T] {
	return &Selections[T]{fields: fields, id: id, cache: cache.NewLRUExpireCacheWithClock(selectionsKept, clk)}
}

// List returns what any of the terms selects, each once, sorted by id; describe lists what one
// term's filters select. Selecting nothing is not an error (the caller says what it means) and
// is not kept: the user may be about to tag one.
func (s *Selections[T]) List(ctx context.Context, terms []Term, describe func(context.Context, []ec2types.Filter) ([]T, error)) ([]T, error) {
	key := Key(terms)
	if cached, ok := s.cache.Get(key); ok {
		return cached.([]T), nil
	}
	byID := map[string]T{}
	for _, term := range terms {
		filters, err := term.Filters(s.fields)
		if err != nil {
			return nil, err
		}
		selected, err := describe(ctx, filters)
		if err != nil {
			return nil, err
		}
		for _, item := range selected {
			byID[s.id(item)] = item
		}
	}
	if len(byID) == 0 {
		return nil, nil
	}
	out := slices.SortedFunc(maps.Values(byID), func(a, b T) int { return strings.Compare(s.id(a), s.id(b)) })
	s.cache.Add(key, out, selectionTTL)
	return out, nil
}
