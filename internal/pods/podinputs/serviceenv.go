package podinputs

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// masterServiceName is the API server's own service in the default
// namespace; every pod gets its variables, service links or not.
const masterServiceName = "kubernetes"

// ServiceEnv returns the service link variables for a pod in namespace: the
// master service's always, and those of the namespace's other services when
// enableServiceLinks is set. Services without a cluster IP are skipped.
func (s *Source) ServiceEnv(ctx context.Context, namespace string, enableServiceLinks bool) (map[string]string, error) {
	var master *v1.Service
	var local []v1.Service
	if enableServiceLinks {
		list, err := s.services(ctx, namespace)
		if err != nil {
			return nil, fmt.Errorf("failed to list services when setting up env vars: %w", err)
		}
		local = list.Items
	}
	// In the default namespace with links on, the list already holds it.
	if !enableServiceLinks || namespace != metav1.NamespaceDefault {
		var err error
		if master, err = s.masterService(ctx); err != nil {
			return nil, fmt.Errorf("failed to get service %s/%s when setting up env vars: %w", metav1.NamespaceDefault, masterServiceName, err)
		}
	}
	return ServiceEnvVars(selectServices(master, local)), nil
}

func (s *Source) services(ctx context.Context, namespace string) (*v1.ServiceList, error) {
	obj, err := s.cache.get(ctx, cacheKey{"services", namespace, ""}, s.serviceTTL, func(ctx context.Context, refresh bool) (runtime.Object, error) {
		opts := metav1.ListOptions{}
		if refresh {
			opts.ResourceVersion = "0"
		}
		return s.client.CoreV1().Services(namespace).List(ctx, opts)
	})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ServiceList), nil
}

// masterService returns default/kubernetes, or nil when it does not exist.
func (s *Source) masterService(ctx context.Context) (*v1.Service, error) {
	obj, err := s.cache.get(ctx, cacheKey{"service", metav1.NamespaceDefault, masterServiceName}, s.serviceTTL, func(ctx context.Context, refresh bool) (runtime.Object, error) {
		return s.client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, masterServiceName, getOptions(refresh))
	})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Service), nil
}

// selectServices picks the services whose variables a pod gets, by name: the
// master service (may be nil), then the pod's namespace's services, which win
// over it on a name clash, as upstream's projection does. Services without a
// cluster IP never take part, so a headless local "kubernetes" does not hide
// the master. The result is sorted by name.
func selectServices(master *v1.Service, local []v1.Service) []*v1.Service {
	byName := map[string]*v1.Service{}
	if master != nil && hasClusterIP(master) {
		byName[master.Name] = master
	}
	for i := range local {
		if svc := &local[i]; hasClusterIP(svc) {
			byName[svc.Name] = svc
		}
	}
	out := make([]*v1.Service, 0, len(byName))
	for _, svc := range byName {
		out = append(out, svc)
	}
	slices.SortFunc(out, func(a, b *v1.Service) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func hasClusterIP(svc *v1.Service) bool {
	return svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != v1.ClusterIPNone
}

// ServiceEnvVars returns the docker-links style variables for services, as
// upstream's kubelet names them. For a service "my-svc" with cluster IP
// 10.0.0.5 and first port 80/TCP named "http":
//
//	MY_SVC_SERVICE_HOST=10.0.0.5
//	MY_SVC_SERVICE_PORT=80           (first port)
//	MY_SVC_SERVICE_PORT_HTTP=80      (each named port)
//	MY_SVC_PORT=tcp://10.0.0.5:80    (first port)
//	MY_SVC_PORT_80_TCP=tcp://10.0.0.5:80, and _PROTO=tcp, _PORT=80,
//	_ADDR=10.0.0.5 (each port)
//
// IPv6 addresses are bracketed in the URLs. Services without a cluster IP
// are skipped; on a clash a later service in the slice wins.
func ServiceEnvVars(services []*v1.Service) map[string]string {
	env := map[string]string{}
	for _, svc := range services {
		if !hasClusterIP(svc) {
			continue
		}
		ip := svc.Spec.ClusterIP
		prefix := envName(svc.Name)
		env[prefix+"_SERVICE_HOST"] = ip
		for i, p := range svc.Spec.Ports {
			port := strconv.Itoa(int(p.Port))
			if i == 0 {
				env[prefix+"_SERVICE_PORT"] = port
			}
			if p.Name != "" {
				env[prefix+"_SERVICE_PORT_"+envName(p.Name)] = port
			}
		}
		for i, p := range svc.Spec.Ports {
			proto := string(p.Protocol)
			if proto == "" {
				proto = string(v1.ProtocolTCP)
			}
			port := strconv.Itoa(int(p.Port))
			addr := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
			if i == 0 {
				env[prefix+"_PORT"] = addr
			}
			base := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
			env[base] = addr
			env[base+"_PROTO"] = strings.ToLower(proto)
			env[base+"_PORT"] = port
			env[base+"_ADDR"] = ip
		}
	}
	return env
}

// envName turns a service or port name into a variable name part.
func envName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}
