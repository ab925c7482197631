package scheduling

import "testing"

func TestFitsSwapped(t *testing.T) {
	limit := resources{4000, 8000}
	cases := []struct {
		name          string
		used, out, in resources
		want          bool
	}{
		{name: "a smaller pod for a larger one", used: resources{4000, 8000}, out: resources{1000, 4000}, in: resources{500, 1000}, want: true},
		{name: "the same pod back", used: resources{4000, 8000}, out: resources{1000, 1000}, in: resources{1000, 1000}, want: true},
		{name: "more memory than the pod out frees", used: resources{3000, 7000}, out: resources{1000, 1000}, in: resources{500, 3000}, want: false},
		{name: "room left makes up the difference", used: resources{3000, 6000}, out: resources{1000, 1000}, in: resources{500, 3000}, want: true},
		{name: "cpu over by one", used: resources{4000, 4000}, out: resources{500, 0}, in: resources{501, 0}, want: false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fitsSwapped(limit, c.used, c.out, c.in); got != c.want {
				t.Errorf("fitsSwapped(%v, %v, %v, %v) = %v, want %v", limit, c.used, c.out, c.in, got, c.want)
			}
		})
	}
}
