package podspec

import (
	"fmt"
	"path"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateVolumes checks the pod's volumes and returns the valid ones by
// name, for the container volumeMounts to be checked against.
func validateVolumes(volumes []v1.Volume, podName string, fldPath *field.Path) (map[string]v1.VolumeSource, field.ErrorList) {
	var allErrs field.ErrorList
	createdClaims := map[string]bool{}
	if podName != "" {
		for _, vol := range volumes {
			if vol.Ephemeral != nil {
				createdClaims[podName+"-"+vol.Name] = true
			}
		}
	}
	valid := map[string]v1.VolumeSource{}
	for i, vol := range volumes {
		idxPath := fldPath.Index(i)
		namePath := idxPath.Child("name")
		errs := validateVolumeSource(&vol.VolumeSource, vol.Name, podName, idxPath)
		if vol.Name == "" {
			errs = append(errs, field.Required(namePath, ""))
		} else {
			errs = append(errs, validateDNS1123Label(vol.Name, namePath)...)
		}
		if _, dup := valid[vol.Name]; dup {
			errs = append(errs, field.Duplicate(namePath, vol.Name))
		}
		if len(errs) == 0 {
			valid[vol.Name] = vol.VolumeSource
		}
		allErrs = append(allErrs, errs...)
		if vol.PersistentVolumeClaim != nil && createdClaims[vol.PersistentVolumeClaim.ClaimName] {
			allErrs = append(allErrs, field.Invalid(idxPath.Child("persistentVolumeClaim", "claimName"), vol.PersistentVolumeClaim.ClaimName,
				"must not reference a PVC that gets created for an ephemeral volume"))
		}
	}
	return valid, allErrs
}

// volumeSourceCheck pairs one volume type's JSON name with its validator.
type volumeSourceCheck struct {
	name     string
	set      bool
	validate func(fldPath *field.Path) field.ErrorList
}

// validateVolumeSource requires exactly one volume type and checks it.
func validateVolumeSource(src *v1.VolumeSource, volName, podName string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	count := 0
	for _, check := range volumeSourceChecks(src, volName, podName, fldPath.Child("name")) {
		if !check.set {
			continue
		}
		if count > 0 {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child(check.name), "may not specify more than 1 volume type"))
			continue
		}
		count++
		if check.validate != nil {
			allErrs = append(allErrs, check.validate(fldPath.Child(check.name))...)
		}
	}
	if count == 0 {
		allErrs = append(allErrs, field.Required(fldPath, "must specify a volume type"))
	}
	return allErrs
}

// namePath is the volume's name field, where errors about the name the
// source derives from it are reported.
func volumeSourceChecks(src *v1.VolumeSource, volName, podName string, namePath *field.Path) []volumeSourceCheck {
	return []volumeSourceCheck{
		{"emptyDir", src.EmptyDir != nil, func(p *field.Path) field.ErrorList { return validateEmptyDir(src.EmptyDir, p) }},
		{"hostPath", src.HostPath != nil, func(p *field.Path) field.ErrorList { return validateHostPath(src.HostPath, p) }},
		{"gitRepo", src.GitRepo != nil, func(p *field.Path) field.ErrorList { return validateGitRepo(src.GitRepo, p) }},
		{"gcePersistentDisk", src.GCEPersistentDisk != nil, func(p *field.Path) field.ErrorList {
			return required(src.GCEPersistentDisk.PDName, p.Child("pdName"))
		}},
		{"awsElasticBlockStore", src.AWSElasticBlockStore != nil, func(p *field.Path) field.ErrorList {
			return required(src.AWSElasticBlockStore.VolumeID, p.Child("volumeID"))
		}},
		{"secret", src.Secret != nil, func(p *field.Path) field.ErrorList { return validateSecretVolume(src.Secret, p) }},
		{"nfs", src.NFS != nil, func(p *field.Path) field.ErrorList { return validateNFS(src.NFS, p) }},
		{"iscsi", src.ISCSI != nil, func(p *field.Path) field.ErrorList { return validateISCSI(src.ISCSI, volName, namePath, p) }},
		{"glusterfs", src.Glusterfs != nil, func(p *field.Path) field.ErrorList {
			return append(required(src.Glusterfs.EndpointsName, p.Child("endpoints")), required(src.Glusterfs.Path, p.Child("path"))...)
		}},
		{"flocker", src.Flocker != nil, nil},
		{"persistentVolumeClaim", src.PersistentVolumeClaim != nil, func(p *field.Path) field.ErrorList {
			return required(src.PersistentVolumeClaim.ClaimName, p.Child("claimName"))
		}},
		{"rbd", src.RBD != nil, func(p *field.Path) field.ErrorList {
			errs := required(src.RBD.RBDImage, p.Child("image"))
			if len(src.RBD.CephMonitors) == 0 {
				errs = append(errs, field.Required(p.Child("monitors"), ""))
			}
			return errs
		}},
		{"cinder", src.Cinder != nil, func(p *field.Path) field.ErrorList { return required(src.Cinder.VolumeID, p.Child("volumeID")) }},
		{"cephfs", src.CephFS != nil, func(p *field.Path) field.ErrorList {
			if len(src.CephFS.Monitors) == 0 {
				return field.ErrorList{field.Required(p.Child("monitors"), "")}
			}
			return nil
		}},
		{"quobyte", src.Quobyte != nil, func(p *field.Path) field.ErrorList {
			return append(required(src.Quobyte.Registry, p.Child("registry")), required(src.Quobyte.Volume, p.Child("volume"))...)
		}},
		{"downwardAPI", src.DownwardAPI != nil, func(p *field.Path) field.ErrorList { return validateDownwardAPIVolume(src.DownwardAPI, p) }},
		{"fc", src.FC != nil, func(p *field.Path) field.ErrorList {
			if len(src.FC.TargetWWNs) == 0 && len(src.FC.WWIDs) == 0 {
				return field.ErrorList{field.Required(p.Child("targetWWNs"), "must specify either targetWWNs or wwids, but not both")}
			}
			return nil
		}},
		{"flexVolume", src.FlexVolume != nil, func(p *field.Path) field.ErrorList { return required(src.FlexVolume.Driver, p.Child("driver")) }},
		{"configMap", src.ConfigMap != nil, func(p *field.Path) field.ErrorList { return validateConfigMapVolume(src.ConfigMap, p) }},
		{"azureFile", src.AzureFile != nil, func(p *field.Path) field.ErrorList {
			return append(required(src.AzureFile.SecretName, p.Child("secretName")), required(src.AzureFile.ShareName, p.Child("shareName"))...)
		}},
		{"vsphereVolume", src.VsphereVolume != nil, func(p *field.Path) field.ErrorList {
			return required(src.VsphereVolume.VolumePath, p.Child("volumePath"))
		}},
		{"photonPersistentDisk", src.PhotonPersistentDisk != nil, func(p *field.Path) field.ErrorList {
			return required(src.PhotonPersistentDisk.PdID, p.Child("pdID"))
		}},
		{"portworxVolume", src.PortworxVolume != nil, func(p *field.Path) field.ErrorList {
			return required(src.PortworxVolume.VolumeID, p.Child("volumeID"))
		}},
		{"azureDisk", src.AzureDisk != nil, func(p *field.Path) field.ErrorList {
			return append(required(src.AzureDisk.DiskName, p.Child("diskName")), required(src.AzureDisk.DataDiskURI, p.Child("diskURI"))...)
		}},
		{"storageos", src.StorageOS != nil, func(p *field.Path) field.ErrorList {
			return required(src.StorageOS.VolumeName, p.Child("volumeName"))
		}},
		{"projected", src.Projected != nil, func(p *field.Path) field.ErrorList { return validateProjected(src.Projected, p) }},
		{"scaleIO", src.ScaleIO != nil, func(p *field.Path) field.ErrorList {
			errs := required(src.ScaleIO.Gateway, p.Child("gateway"))
			errs = append(errs, required(src.ScaleIO.System, p.Child("system"))...)
			return append(errs, required(src.ScaleIO.VolumeName, p.Child("volumeName"))...)
		}},
		{"csi", src.CSI != nil, func(p *field.Path) field.ErrorList { return validateCSIVolume(src.CSI, p) }},
		{"ephemeral", src.Ephemeral != nil, func(p *field.Path) field.ErrorList {
			return validateEphemeralVolume(src.Ephemeral, volName, podName, namePath, p)
		}},
		{"image", src.Image != nil, func(p *field.Path) field.ErrorList { return validateImageVolume(src.Image, p) }},
	}
}

func required(value string, fldPath *field.Path) field.ErrorList {
	if value == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	return nil
}

func validateEmptyDir(e *v1.EmptyDirVolumeSource, fldPath *field.Path) field.ErrorList {
	if e.SizeLimit != nil && e.SizeLimit.Cmp(resource.Quantity{}) < 0 {
		return field.ErrorList{field.Forbidden(fldPath.Child("sizeLimit"), "SizeLimit field must be a valid resource quantity")}
	}
	return nil
}

var hostPathTypes = []v1.HostPathType{
	v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory, v1.HostPathFileOrCreate,
	v1.HostPathFile, v1.HostPathSocket, v1.HostPathCharDev, v1.HostPathBlockDev,
}

func validateHostPath(h *v1.HostPathVolumeSource, fldPath *field.Path) field.ErrorList {
	if h.Path == "" {
		return field.ErrorList{field.Required(fldPath.Child("path"), "")}
	}
	allErrs := validatePathNoBacksteps(h.Path, fldPath.Child("path"))
	if h.Type != nil && !containsValue(hostPathTypes, *h.Type) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), *h.Type, hostPathTypes))
	}
	return allErrs
}

func validateGitRepo(g *v1.GitRepoVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := required(g.Repository, fldPath.Child("repository"))
	return append(allErrs, validateLocalDescendingPath(g.Directory, fldPath.Child("directory"))...)
}

func validateSecretVolume(s *v1.SecretVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := required(s.SecretName, fldPath.Child("secretName"))
	allErrs = append(allErrs, validateFileMode(s.DefaultMode, fldPath.Child("defaultMode"))...)
	for i := range s.Items {
		allErrs = append(allErrs, validateKeyToPath(&s.Items[i], fldPath.Child("items").Index(i))...)
	}
	return allErrs
}

func validateConfigMapVolume(c *v1.ConfigMapVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := required(c.Name, fldPath.Child("name"))
	allErrs = append(allErrs, validateFileMode(c.DefaultMode, fldPath.Child("defaultMode"))...)
	for i := range c.Items {
		allErrs = append(allErrs, validateKeyToPath(&c.Items[i], fldPath.Child("items").Index(i))...)
	}
	return allErrs
}

func validateKeyToPath(kp *v1.KeyToPath, fldPath *field.Path) field.ErrorList {
	allErrs := required(kp.Key, fldPath.Child("key"))
	allErrs = append(allErrs, required(kp.Path, fldPath.Child("path"))...)
	allErrs = append(allErrs, validateLocalNonReservedPath(kp.Path, fldPath.Child("path"))...)
	return append(allErrs, validateFileMode(kp.Mode, fldPath.Child("mode"))...)
}

func validateNFS(n *v1.NFSVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := required(n.Server, fldPath.Child("server"))
	allErrs = append(allErrs, required(n.Path, fldPath.Child("path"))...)
	if !path.IsAbs(n.Path) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("path"), n.Path, "must be an absolute path"))
	}
	return allErrs
}

func validateISCSI(s *v1.ISCSIVolumeSource, volName string, namePath, fldPath *field.Path) field.ErrorList {
	allErrs := required(s.TargetPortal, fldPath.Child("targetPortal"))
	if s.IQN == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("iqn"), ""))
	} else if !strings.HasPrefix(s.IQN, "iqn") && !strings.HasPrefix(s.IQN, "eui") && !strings.HasPrefix(s.IQN, "naa") {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("iqn"), s.IQN, "must be valid format starting with iqn, eui, or naa"))
	}
	if s.Lun < 0 || s.Lun > 255 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("lun"), s.Lun, "must be between 0 and 255, inclusive"))
	}
	if (s.DiscoveryCHAPAuth || s.SessionCHAPAuth) && s.SecretRef == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("secretRef"), ""))
	}
	if s.InitiatorName != nil && len(volName+":"+s.TargetPortal) > 64 {
		allErrs = append(allErrs, field.Invalid(namePath, volName,
			"Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if iscsi.initiatorName is specified."))
	}
	return allErrs
}

// Downward API field paths a volume file may project.
var volumeFieldPaths = []string{"metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"}

func validateDownwardAPIVolume(d *v1.DownwardAPIVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateFileMode(d.DefaultMode, fldPath.Child("defaultMode"))
	for i := range d.Items {
		allErrs = append(allErrs, validateDownwardAPIVolumeFile(&d.Items[i], fldPath)...)
	}
	return allErrs
}

func validateDownwardAPIVolumeFile(file *v1.DownwardAPIVolumeFile, fldPath *field.Path) field.ErrorList {
	allErrs := required(file.Path, fldPath.Child("path"))
	allErrs = append(allErrs, validateLocalNonReservedPath(file.Path, fldPath.Child("path"))...)
	switch {
	case file.FieldRef != nil:
		allErrs = append(allErrs, validateObjectFieldSelector(file.FieldRef, volumeFieldPaths, fldPath.Child("fieldRef"))...)
		if file.ResourceFieldRef != nil {
			allErrs = append(allErrs, field.Invalid(fldPath, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
		}
	case file.ResourceFieldRef != nil:
		allErrs = append(allErrs, validateResourceFieldSelector(file.ResourceFieldRef, true, fldPath.Child("resourceFieldRef"))...)
	default:
		allErrs = append(allErrs, field.Required(fldPath, "one of fieldRef and resourceFieldRef is required"))
	}
	return append(allErrs, validateFileMode(file.Mode, fldPath.Child("mode"))...)
}

const (
	minTokenExpirationSeconds = 10 * 60
	maxTokenExpirationSeconds = 1 << 32
)

func validateProjected(p *v1.ProjectedVolumeSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateFileMode(p.DefaultMode, fldPath.Child("defaultMode"))
	paths := map[string]bool{}
	claimPath := func(file string, value any) {
		if file == "" {
			return
		}
		if paths[file] {
			allErrs = append(allErrs, field.Invalid(fldPath, value, "conflicting duplicate paths"))
		}
		paths[file] = true
	}
	for i, src := range p.Sources {
		srcPath := fldPath.Child("sources").Index(i)
		count := 0
		if src.Secret != nil {
			count++
			sp := srcPath.Child("secret")
			allErrs = append(allErrs, required(src.Secret.Name, sp.Child("name"))...)
			for j := range src.Secret.Items {
				allErrs = append(allErrs, validateKeyToPath(&src.Secret.Items[j], sp.Child("items").Index(j))...)
				claimPath(src.Secret.Items[j].Path, src.Secret.Name)
			}
		}
		if src.ConfigMap != nil {
			count++
			cp := srcPath.Child("configMap")
			allErrs = append(allErrs, required(src.ConfigMap.Name, cp.Child("name"))...)
			for j := range src.ConfigMap.Items {
				allErrs = append(allErrs, validateKeyToPath(&src.ConfigMap.Items[j], cp.Child("items").Index(j))...)
				claimPath(src.ConfigMap.Items[j].Path, src.ConfigMap.Name)
			}
		}
		if src.DownwardAPI != nil {
			count++
			for j := range src.DownwardAPI.Items {
				allErrs = append(allErrs, validateDownwardAPIVolumeFile(&src.DownwardAPI.Items[j], srcPath.Child("downwardAPI"))...)
				claimPath(src.DownwardAPI.Items[j].Path, src.DownwardAPI.Items[j].Path)
			}
		}
		if tok := src.ServiceAccountToken; tok != nil {
			count++
			tp := srcPath.Child("serviceAccountToken")
			if tok.ExpirationSeconds != nil && *tok.ExpirationSeconds < minTokenExpirationSeconds {
				allErrs = append(allErrs, field.Invalid(tp.Child("expirationSeconds"), *tok.ExpirationSeconds, "may not specify a duration less than 10 minutes"))
			}
			if tok.ExpirationSeconds != nil && *tok.ExpirationSeconds > maxTokenExpirationSeconds {
				allErrs = append(allErrs, field.Invalid(tp.Child("expirationSeconds"), *tok.ExpirationSeconds, "may not specify a duration larger than 2^32 seconds"))
			}
			if tok.Path == "" {
				allErrs = append(allErrs, field.Required(tp.Child("path"), ""))
			} else {
				allErrs = append(allErrs, validateLocalNonReservedPath(tok.Path, tp.Child("path"))...)
			}
			claimPath(tok.Path, tok.Path)
		}
		if ctb := src.ClusterTrustBundle; ctb != nil {
			count++
			cp := srcPath.Child("clusterTrustBundle")
			switch {
			case ctb.Name != nil && ctb.SignerName != nil:
				allErrs = append(allErrs, field.Invalid(cp, ctb, "only one of name and signerName may be used"))
			case ctb.Name == nil && ctb.SignerName == nil:
				allErrs = append(allErrs, field.Required(cp, "either name or signerName must be specified"))
			}
			allErrs = append(allErrs, required(ctb.Path, cp.Child("path"))...)
			allErrs = append(allErrs, validateLocalNonReservedPath(ctb.Path, cp.Child("path"))...)
			claimPath(ctb.Path, ctb.Path)
		}
		if pc := src.PodCertificate; pc != nil {
			count++
			pp := srcPath.Child("podCertificate")
			allErrs = append(allErrs, required(pc.SignerName, pp.Child("signerName"))...)
			allErrs = append(allErrs, required(pc.KeyType, pp.Child("keyType"))...)
			for _, f := range []struct{ name, value string }{
				{"credentialBundlePath", pc.CredentialBundlePath}, {"keyPath", pc.KeyPath}, {"certificateChainPath", pc.CertificateChainPath},
			} {
				if f.value != "" {
					allErrs = append(allErrs, validateLocalNonReservedPath(f.value, pp.Child(f.name))...)
					claimPath(f.value, f.value)
				}
			}
		}
		if count > 1 {
			allErrs = append(allErrs, field.Forbidden(srcPath, "may not specify more than 1 volume type per source"))
		}
	}
	return allErrs
}

func validateCSIVolume(c *v1.CSIVolumeSource, fldPath *field.Path) field.ErrorList {
	driverPath := fldPath.Child("driver")
	var allErrs field.ErrorList
	if c.Driver == "" {
		allErrs = append(allErrs, field.Required(driverPath, ""))
	}
	if len(c.Driver) > 63 {
		allErrs = append(allErrs, field.TooLong(driverPath, "", 63))
	}
	allErrs = append(allErrs, validateDNS1123Subdomain(strings.ToLower(c.Driver), driverPath)...)
	if ref := c.NodePublishSecretRef; ref != nil {
		if ref.Name == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("nodePublishSecretRef", "name"), ""))
		} else {
			allErrs = append(allErrs, validateName(ref.Name, apivalidation.NameIsDNSSubdomain, false, fldPath.Child("nodePublishSecretRef", "name"))...)
		}
	}
	return allErrs
}

func validateEphemeralVolume(e *v1.EphemeralVolumeSource, volName, podName string, namePath, fldPath *field.Path) field.ErrorList {
	if e.VolumeClaimTemplate == nil {
		return field.ErrorList{field.Required(fldPath.Child("volumeClaimTemplate"), "")}
	}
	var allErrs field.ErrorList
	if len(e.VolumeClaimTemplate.Spec.AccessModes) == 0 {
		allErrs = append(allErrs, field.Required(fldPath.Child("volumeClaimTemplate", "spec", "accessModes"), "at least 1 access mode is required"))
	}
	if podName != "" && volName != "" {
		claim := podName + "-" + volName
		for _, msg := range apivalidation.NameIsDNSSubdomain(claim, false) {
			allErrs = append(allErrs, field.Invalid(namePath, volName, fmt.Sprintf("PVC name %q: %v", claim, msg)))
		}
	}
	return allErrs
}

func validateImageVolume(img *v1.ImageVolumeSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if img.Reference == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("reference"), ""))
	}
	return append(allErrs, validatePullPolicy(img.PullPolicy, fldPath.Child("pullPolicy"))...)
}

func containsValue[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}
