# Entry points for people and CI. Each target's script lives in hack/ and says what it does.
.PHONY: test demo demo-down deps lint crds cluster-up cluster-down

test:            ## install everything, lint, type-check and run all test tiers (what CI runs)
	bash hack/test.sh

demo:            ## local control plane + CRDs + operator + a sample Scenario and OASISEvaluation
	bash hack/demo.sh

demo-down:       ## stop the demo's operator and control plane
	bash hack/demo-down.sh

deps:            ## Debian packages, Kubernetes binaries (built once, cached) and the Python venv
	bash hack/install-deps.sh

lint:
	.venv/bin/ruff check operator tests bench && .venv/bin/ruff format --check operator tests bench && .venv/bin/mypy && .venv/bin/mypy bench && .venv/bin/lint-imports

crds:            ## regenerate crds/ from the pydantic models
	.venv/bin/oasis crds generate

cluster-up:
	.venv/bin/oasis cluster --run-dir run/cluster up

cluster-down:
	.venv/bin/oasis cluster --run-dir run/cluster down
