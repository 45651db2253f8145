package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"

	"github.com/seed-kubelet/kubelet/internal/kubeclient"
)

// Attributes is one authorization check of a kubelet API request: verb on
// nodes/<Subresource> named Name, in the core group at v1.
type Attributes struct {
	User        *User
	Verb        string
	APIVersion  string
	Resource    string
	Subresource string
	Name        string
	Path        string
}

// Kubelet API paths with their own subresource.
const (
	podsPath        = "/pods"
	runningPodsPath = "/runningpods/"
	healthzPath     = "/healthz"
	configzPath     = "/configz"
	flagzPath       = "/flagz"
	statuszPath     = "/statusz"
	statsPath       = "/stats/"
	metricsPath     = "/metrics"
	logsPath        = "/logs/"
	checkpointPath  = "/checkpoint/"
)

// isSubpath reports whether p is path or below it.
func isSubpath(p, path string) bool {
	path = strings.TrimSuffix(path, "/")
	return p == path || strings.HasPrefix(p, path) && p[len(path)] == '/'
}

// RequestAttributes lists the checks for a request in order; any one
// allowing it suffices. As in upstream 1.36 (KubeletFineGrainedAuthz GA),
// /pods, /runningpods, /healthz and /configz try their own subresource and
// then proxy; /stats, /metrics, /logs, /checkpoint, /statusz and /flagz
// (as configz) have only their own; everything else is proxy. The verb
// comes from the HTTP method only, so a websocket GET to /exec is "get".
func RequestAttributes(u *User, nodeName string, r *http.Request) []Attributes {
	verb := ""
	switch r.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodGet:
		verb = "get"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
	}
	p := r.URL.Path
	var subresources []string
	switch {
	case isSubpath(p, podsPath):
		subresources = append(subresources, "pods")
	case isSubpath(p, healthzPath):
		subresources = append(subresources, "healthz")
	case isSubpath(p, configzPath):
		subresources = append(subresources, "configz")
	case isSubpath(p, runningPodsPath):
		subresources = append(subresources, "pods")
	}
	switch {
	case isSubpath(p, statsPath):
		subresources = append(subresources, "stats")
	case isSubpath(p, metricsPath):
		subresources = append(subresources, "metrics")
	case isSubpath(p, logsPath):
		subresources = append(subresources, "log")
	case isSubpath(p, checkpointPath):
		subresources = append(subresources, "checkpoint")
	case isSubpath(p, statuszPath):
		subresources = append(subresources, "statusz")
	case isSubpath(p, flagzPath):
		subresources = append(subresources, "configz")
	default:
		subresources = append(subresources, "proxy")
	}
	attrs := make([]Attributes, 0, len(subresources))
	for _, s := range subresources {
		attrs = append(attrs, Attributes{User: u, Verb: verb, APIVersion: "v1", Resource: "nodes", Subresource: s, Name: nodeName, Path: p})
	}
	klog.V(5).InfoS("Node request attributes", "user", u.Name, "verb", verb, "resource", "nodes", "subresource(s)", subresources)
	return attrs
}

type decision int

const (
	decisionNoOpinion decision = iota
	decisionAllow
	decisionDeny
)

// authorizer decides one check.
type authorizer interface {
	authorize(ctx context.Context, a Attributes) (decision, string, error)
}

type alwaysAllow struct{}

func (alwaysAllow) authorize(context.Context, Attributes) (decision, string, error) {
	return decisionAllow, "", nil
}

func newAuthorizer(cfg kubeletconfigv1beta1.KubeletAuthorization, client kubeclient.Interface, clk clock.Clock, retry retryBackoff) (authorizer, error) {
	mode := cfg.Mode
	if mode == "" {
		mode = kubeletconfigv1beta1.KubeletAuthorizationModeWebhook
	}
	switch mode {
	case kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow:
		return alwaysAllow{}, nil
	case kubeletconfigv1beta1.KubeletAuthorizationModeWebhook:
		if client == nil {
			return nil, errors.New("no client provided, cannot use webhook authorization")
		}
		allowTTL, denyTTL := cfg.Webhook.CacheAuthorizedTTL.Duration, cfg.Webhook.CacheUnauthorizedTTL.Duration
		if allowTTL == 0 {
			allowTTL = defaultCacheAuthorizedTTL
		}
		if denyTTL == 0 {
			denyTTL = defaultCacheUnauthorizedTTL
		}
		return &sarAuthorizer{
			client: client.AuthorizationV1().SubjectAccessReviews(), retry: retry, clock: clk,
			allowTTL: allowTTL, denyTTL: denyTTL, cache: newExpiringCache[authorizationv1.SubjectAccessReviewStatus](clk, sarCacheSize),
		}, nil
	default:
		return nil, fmt.Errorf("unknown authorization mode %s", mode)
	}
}

const (
	// sarCacheSize bounds the cached review results, as upstream's LRU.
	sarCacheSize = 8192
	// maxCachedAttrSize leaves oversized requests uncached, as upstream.
	maxCachedAttrSize = 10000
)

// sarAuthorizer asks the API server with a SubjectAccessReview, caching
// allowed answers for allowTTL and the rest for denyTTL, keyed by the
// whole review spec. A failed review is an error and no opinion.
type sarAuthorizer struct {
	client   kubeclient.SubjectAccessReviewInterface
	retry    retryBackoff
	clock    clock.Clock
	allowTTL time.Duration
	denyTTL  time.Duration
	cache    *expiringCache[authorizationv1.SubjectAccessReviewStatus]
}

func (s *sarAuthorizer) authorize(ctx context.Context, a Attributes) (decision, string, error) {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: a.Verb, Version: a.APIVersion, Resource: a.Resource, Subresource: a.Subresource, Name: a.Name,
		},
	}}
	if u := a.User; u != nil {
		review.Spec.User, review.Spec.UID, review.Spec.Groups = u.Name, u.UID, u.Groups
		if u.Extra != nil {
			review.Spec.Extra = make(map[string]authorizationv1.ExtraValue, len(u.Extra))
			for k, v := range u.Extra {
				review.Spec.Extra[k] = v
			}
		}
	}
	rawKey, err := json.Marshal(review.Spec)
	if err != nil {
		return decisionNoOpinion, "", err
	}
	key := string(rawKey)
	status, cached := s.cache.get(key)
	if !cached {
		var result *authorizationv1.SubjectAccessReview
		err := withRetry(ctx, s.clock, s.retry, func() error {
			var err error
			result, err = s.client.Create(ctx, review, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			klog.ErrorS(err, "Failed to make webhook authorizer request")
			return decisionNoOpinion, "", err
		}
		status = result.Status
		if cacheable(a) {
			ttl := s.denyTTL
			if status.Allowed {
				ttl = s.allowTTL
			}
			s.cache.set(key, status, ttl)
		}
	}
	switch {
	case status.Denied && status.Allowed:
		return decisionDeny, status.Reason, errors.New("webhook subject access review returned both allow and deny response")
	case status.Denied:
		return decisionDeny, status.Reason, nil
	case status.Allowed:
		return decisionAllow, status.Reason, nil
	default:
		return decisionNoOpinion, status.Reason, nil
	}
}

func cacheable(a Attributes) bool {
	n := len(a.Verb) + len(a.APIVersion) + len(a.Resource) + len(a.Subresource) + len(a.Name) + len(a.Path)
	if a.User != nil {
		n += len(a.User.Name) + len(a.User.UID)
		for _, g := range a.User.Groups {
			n += len(g)
		}
		for k, vs := range a.User.Extra {
			n += len(k)
			for _, v := range vs {
				n += len(v)
			}
		}
	}
	return n < maxCachedAttrSize
}
