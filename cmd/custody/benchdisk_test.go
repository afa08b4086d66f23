package main

import (
	"context"
	"testing"

	"github.com/custody-dev/custody/internal/bench"
)

// A floor call appends once for a READ call and twice for a WRITE call.
func TestFloorSideShapesCalls(t *testing.T) {
	d, err := bench.OpenDiskFloor(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	side := floorSide(d, func(n int64) string {
		if n%2 == 0 {
			return toolWrite
		}
		return toolRead
	})
	for n := range int64(10) { // 5 WRITE calls, 5 READ calls
		if err := side.Do(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	if rows, _ := d.Committed(); rows != 15 {
		t.Errorf("5 WRITE and 5 READ calls appended %d blocks, want 15", rows)
	}
}
