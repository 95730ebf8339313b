# Entry points for people and CI. Each target's script lives in hack/ and says what it does; the README's
# "What each target builds" lists it.
.PHONY: test test-image test-node demo demo-down deps test-deps plan lint crds cluster-up cluster-down

test:            ## install what the tests need, lint, type-check and run all test tiers (what CI runs)
	bash hack/test.sh

test-image:      ## the operator image (from nothing when its Debian layers are not cached: ~21 min) and its test
	bash hack/test-image.sh

test-node:       ## a real node (containerd + kubelet) in the local plane and the chart's operator pod on it (tests/e2e/node)
	bash hack/test-node.sh

demo:            ## install what the demo needs; local control plane, CRDs, operator, two evaluations
	bash hack/demo.sh

demo-down:       ## stop the demo's operator and control plane
	bash hack/demo-down.sh

deps:            ## what the demo and `oasis evaluate` need: Debian packages, Go if needed, Kubernetes (built once, cached), .venv
	bash hack/install-deps.sh demo

test-deps:       ## deps, plus what only the tests use: chromium, the public runner oasisctl, the operator image
	bash hack/install-deps.sh test

plan:            ## print what `make demo` and `make test` would install or build here, and build nothing
	@bash hack/install-deps.sh demo --plan; bash hack/install-deps.sh test --plan

lint:
	.venv/bin/ruff check operator tests bench && .venv/bin/ruff format --check operator tests bench && .venv/bin/mypy && .venv/bin/mypy bench && .venv/bin/lint-imports

crds:            ## regenerate crds/ from the pydantic models
	.venv/bin/oasis crds generate

cluster-up:
	.venv/bin/oasis cluster --run-dir run/cluster up

cluster-down:
	.venv/bin/oasis cluster --run-dir run/cluster down
