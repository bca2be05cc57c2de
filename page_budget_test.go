package parley_test

import (
	"testing"

	"github.com/parley-dev/parley"
)

func TestFitsBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                     string
		budget, used, size, held int
		want                     bool
	}{
		{name: "no budget", budget: 0, used: 1 << 30, size: 1 << 20, held: 999, want: true},
		{name: "within", budget: 100, used: 40, size: 60, held: 1, want: true},
		{name: "past it", budget: 100, used: 41, size: 60, held: 1, want: false},
		{name: "the first message of a page, however large", budget: 100, used: 0, size: 1 << 20, held: 0, want: true},
		{name: "the first of a page when the budget is spent", budget: 100, used: 500, size: 10, held: 0, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := parley.FitsBudget(tt.budget, tt.used, tt.size, tt.held); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
