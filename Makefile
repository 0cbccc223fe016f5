# The two commands of the quick start: `make run` and `make test`.
.PHONY: setup run test lint bench

setup:
	@bash scripts/setup

run: setup
	@bash scripts/demo

test: setup
	.venv/bin/ruff check src tests benchmarks
	.venv/bin/python -m pytest -q --durations=20

lint: setup
	.venv/bin/ruff check src tests benchmarks

bench: setup
	.venv/bin/pip install -q -e ".[bench]"
	.venv/bin/python -m benchmarks
