package main

import (
	"testing"
	"time"
)

func TestParseKeepAlive(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "30m", want: 30 * time.Minute},
		{in: "1h30m", want: 90 * time.Minute},
		{in: "0", want: 0},
		{in: "-1", want: -time.Second},
		{in: "600", want: 10 * time.Minute},
		{in: "soon", bad: true},
		{in: "10 minutes", bad: true},
	}
	for _, tc := range cases {
		got, err := parseKeepAlive(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("parseKeepAlive(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("parseKeepAlive(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}
