package podsync

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestActiveDeadline(t *testing.T) {
	start := metav1.NewTime(time.Unix(1000, 0))
	ten := int64(10)
	withDeadline := &v1.Pod{Spec: v1.PodSpec{ActiveDeadlineSeconds: &ten}}
	cases := []struct {
		name         string
		pod          *v1.Pod
		started      *metav1.Time
		now          time.Time
		wantExceeded bool
		wantLeft     time.Duration
	}{
		{name: "no deadline", pod: &v1.Pod{}, started: &start, now: time.Unix(5000, 0)},
		{name: "not started yet", pod: withDeadline, now: time.Unix(5000, 0)},
		{name: "time left", pod: withDeadline, started: &start, now: time.Unix(1004, 0), wantLeft: 6 * time.Second},
		{name: "exceeded", pod: withDeadline, started: &start, now: time.Unix(1010, 0), wantExceeded: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			exceeded, left := ActiveDeadline(tc.pod, tc.started, tc.now)
			if exceeded != tc.wantExceeded || left != tc.wantLeft {
				t.Fatalf("ActiveDeadline = %v, %v; want %v, %v", exceeded, left, tc.wantExceeded, tc.wantLeft)
			}
		})
	}
}
