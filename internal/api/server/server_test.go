package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type podList []*v1.Pod

func (p podList) List() []*v1.Pod { return p }

type statusMap map[types.UID]v1.PodStatus

func (s statusMap) Get(uid types.UID) (v1.PodStatus, bool) { st, ok := s[uid]; return st, ok }

func TestHealthz(t *testing.T) {
	cases := []struct {
		name     string
		checks   []HealthCheck
		wantCode int
		wantBody string
	}{
		{name: "all pass", checks: []HealthCheck{{Name: "pleg", Check: func() error { return nil }}}, wantCode: 200, wantBody: "ok"},
		{name: "pleg fails", checks: []HealthCheck{{Name: "pleg", Check: func() error { return errors.New("stalled") }}}, wantCode: 500, wantBody: "[-]pleg failed: stalled"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Healthz(tc.checks).ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
			if rec.Code != tc.wantCode || !strings.Contains(rec.Body.String(), tc.wantBody) {
				t.Fatalf("got %d %q, want %d containing %q", rec.Code, rec.Body.String(), tc.wantCode, tc.wantBody)
			}
		})
	}
}

func TestPodsCarriesLiveStatus(t *testing.T) {
	pods := podList{{ObjectMeta: metav1.ObjectMeta{Name: "web-node", Namespace: "default", UID: "u1"}}}
	statuses := statusMap{"u1": {Phase: v1.PodRunning, PodIP: "10.88.0.5"}}
	rec := httptest.NewRecorder()
	ReadOnlyMux(APIConfig{Pods: pods, Statuses: statuses}).ServeHTTP(rec, httptest.NewRequest("GET", "/pods", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("code %d", rec.Code)
	}
	var list v1.PodList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	if list.Kind != "PodList" || len(list.Items) != 1 || list.Items[0].Status.Phase != v1.PodRunning || list.Items[0].Status.PodIP != "10.88.0.5" {
		t.Fatalf("unexpected list: %+v", list)
	}
	rec = httptest.NewRecorder()
	ReadOnlyMux(APIConfig{Pods: pods, Statuses: statuses}).ServeHTTP(rec, httptest.NewRequest("POST", "/pods", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /pods code %d, want 405", rec.Code)
	}
}
