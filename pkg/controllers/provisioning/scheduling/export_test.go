package scheduling

// PackOnly is Schedule without the shrink pass, for tests that compare the two.
func PackOnly(in Input) *Results {
	s := pack(in)
	s.finish()
	return s.results
}

// ScheduleWalkingEveryGrowth is Schedule with each search for the cheapest growth among every
// open node walking them all, as placeOnNewNodes did before the growth index.
func ScheduleWalkingEveryGrowth(in Input) *Results {
	s := newScheduler(in)
	s.growth.walk = true
	return s.plan(in)
}

// OptimalDuals is optimalDuals, for the pattern bound's column generation, and ErrDegenerate
// what it wraps when the optimum's positive variables do not name its basis.
var (
	OptimalDuals  = optimalDuals
	ErrDegenerate = errDegenerate
)

// FailedMoveRestored plans in as Schedule does up to the batch packer, grows the room under the
// first provisioner's cpu limit by freed (as an earlier group's packing frees it), then has the
// first group of interchangeable new nodes moved as a packing that puts every movable pod on
// the group's first free node, which cannot hold them all, so that restore puts the group back.
// It returns the group's nodes' types before and after, and whether the move was refused.
func FailedMoveRestored(in Input, freed int64) (before, after []string, refused bool) {
	s := pack(in)
	s.shrink()
	group := s.interchangeable()[0]
	for _, n := range group {
		before = append(before, n.cheapest.it.Name)
	}
	g := newGroupPacking(group, s.hostFreeFrom())
	group[0].prov.remaining[0] += freed
	all := packedBin{typ: 0, fixed: -1, counts: make([]int, len(g.shapes))}
	for i, shape := range g.shapes {
		all.counts[i] = shape.count
	}
	refused = !s.apply(g, []packedBin{all})
	for _, n := range group {
		after = append(after, n.cheapest.it.Name)
	}
	return before, after, refused
}
