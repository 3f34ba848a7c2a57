#!/usr/bin/env bash
# Points hack/tools/go.mod at k8s.io/kubernetes KUBE_VERSION and maps every staging
# module that Kubernetes requires at v0.0.0 (and replaces with ./staging/..., which its
# module zip does not contain) to the matching published release, v0.<minor>.<patch>.
#
# The list is read from Kubernetes' own go.mod in the module cache, so a new release that
# adds a staging module needs no edit here. After it:
#
#   go get -tool k8s.io/kubernetes/cmd/kube-apiserver@$KUBE_VERSION go.etcd.io/etcd/server/v3@<etcd>
#   go mod tidy
#
# Usage: hack/tools/gen-replaces.sh [KUBE_VERSION]   (default: the version go.mod requires)
set -euo pipefail
cd "$(dirname "$0")"

kube=${1:-$(go mod edit -json | awk -F'"' '/"Path": "k8s.io\/kubernetes"/ {getline; print $4; exit}')}
if [[ ! $kube =~ ^v1\.([0-9]+)\.([0-9]+)$ ]]; then
	echo "gen-replaces: want a Kubernetes release like v1.37.2, got '${kube}'" >&2
	exit 2
fi
staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

gomod=$(go mod download -json "k8s.io/kubernetes@${kube}" | awk -F'"' '/"GoMod":/ {print $4}')
[[ -f $gomod ]] || { echo "gen-replaces: no go.mod for k8s.io/kubernetes@${kube}" >&2; exit 1; }

# Requirements of the form "k8s.io/<m> v0.0.0", in a require block or on one line.
mapfile -t mods < <(awk '
	/^require[ \t]*\(/ { block = 1; next }
	block && /^\)/     { block = 0; next }
	block              { if ($1 ~ /^k8s\.io\// && $2 == "v0.0.0") print $1; next }
	/^require[ \t]/    { if ($2 ~ /^k8s\.io\// && $3 == "v0.0.0") print $2 }
' "$gomod" | sort -u)
((${#mods[@]} > 0)) || { echo "gen-replaces: no v0.0.0 staging requirements in $gomod" >&2; exit 1; }

args=(-require="k8s.io/kubernetes@${kube}")
for m in "${mods[@]}"; do
	args+=(-replace="${m}=${m}@${staging}")
done
go mod edit "${args[@]}"
echo "gen-replaces: k8s.io/kubernetes ${kube}; ${#mods[@]} staging modules -> ${staging}"
