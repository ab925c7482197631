package scheduling

// PackOnly is Schedule without the shrink pass, for tests that compare the two.
func PackOnly(in Input) *Results {
	s := pack(in)
	s.finish()
	return s.results
}

// OptimalDuals is optimalDuals, for the pattern bound's column generation.
var OptimalDuals = optimalDuals
