// Package admission holds the validating webhooks of the oar-operator. On CREATE and
// UPDATE of a RulePack, a Capability or an OperatorConfig it runs the loader of
// internal/engine — the one the controller, the engine sidecar and oarctl run — so
// "admitted" means "the controller can publish it".
//
// The line between refusing and warning: refuse what is wrong in the object itself or
// against the current state of the Capability it names; warn about what depends on
// other objects a GitOps sync may apply in any order.
//
//   - RulePack: refused for every rule the loader rejects against the Capability (fields,
//     version gate [OAR-DOC-3], grammar, types, profiles, anchors, detectors, transforms,
//     copy), for duplicate identifiers [OAR-DOC-9] and suppression cycles [OAR-EVAL-16]
//     within the pack, and for references no pack defines ([OAR-EVAL-13], [OAR-OPS-5],
//     [OAR-FIRE-11]). Warned: the Capability does not exist (only the checks that need no
//     capability run), a duplicate identifier in another pack, a reference to a rule only an
//     unpublished pack defines, a cycle or a suppressed mandatory rule ([OAR-EVAL-17]) across
//     packs, a published pack or configuration ([OAR-CFG-4]) that the update would break.
//   - Capability: refused when the document is invalid ([OAR-FACT-24], [OAR-PROF-2],
//     [OAR-OPS-22], …) and on an update that would make a published pack or configuration
//     stop loading; a create that packs naming it do not load against is warned.
//   - OperatorConfig: refused on its shape and version [OAR-CFG-1] and, against the
//     published rule set, [OAR-CFG-4], [OAR-CFG-5], [OAR-CFG-8]; warned when there is no
//     published rule set, or when a rule it names is in a pack not published yet.
//
// Every diagnostic becomes one field.Error of an apierrors.NewInvalid response whose path
// leads into the resource (spec.rules[2].when, spec.config.disable[0], spec.profiles) and
// whose detail carries the clause and the rule, so kubectl prints one bullet per problem.
// An update that leaves spec unchanged is admitted without a look: the webhook
// configuration's matchConditions skip it, and ValidateUpdate checks again.
//
// The validators read the cluster through Cluster; ClientCluster implements it over the
// manager's cached client. Judge runs the same validators offline for `oarctl validate`:
// each object of a set of manifests is judged as if created into a cluster holding the
// others, read through a Cluster over the set whose published state is the bundle the
// controller would assemble of it (set.go), and answered as kubectl would show it. Each
// warning carries its WarningKind (warnings.go), the one list of which warnings mean the
// controller will not serve what was written, which `oarctl validate --strict` fails on.
//
// Install registers the webhooks on every replica, once AddCertRotator —
// github.com/open-policy-agent/cert-controller — has issued their serving certificate
// and injected its CA; it rotates them from then on.
//
// InstallInjector serves the engine injector (injector.go), the mutating webhook for Pods
// that opt in with the label rules.oar.dev/capability: it reads the namespace's label and
// whether the Capability exists, and leaves the mutation to internal/inject.
package admission
