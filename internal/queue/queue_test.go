package queue

import (
	"slices"
	"testing"
)

func TestDrain(t *testing.T) {
	ch := make(chan int, 10)
	for i := range 5 {
		ch <- i
	}
	if got := Drain([]int{-1}, ch, 3); !slices.Equal(got, []int{-1, 0, 1}) {
		t.Errorf("Drain up to 3 = %v, want the batch topped up to 3", got)
	}
	if got := Drain(nil, ch, 10); !slices.Equal(got, []int{2, 3, 4}) {
		t.Errorf("Drain = %v, want what waited and no more", got)
	}
	ch <- 5
	close(ch)
	if got := Gather(nil, ch, 10); !slices.Equal(got, []int{5}) {
		t.Errorf("Gather from a closed channel = %v, want what it held", got)
	}
}
