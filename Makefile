# Thin wrapper over CMake. Every target that runs something (demo, tests, perf) installs what it
# needs first (tests/testkit/install-deps, idempotent), so these work on a fresh machine; build and
# install use the build libraries already there (README.md, Requirements). See README.md.
#
#   make demo        boot a broker, fill a topic, consume it with kconsume (the main job)
#   make test        deps, ASan+UBSan build, unit tests, boot the testkit cluster, integration tests
#   make test-long   the long variants (chaos, rolling upgrades) and valgrind; make soak: hours of churn
#   make test-compat the compatibility suite: every Kafka version the testkit runs, then README's table
#   make valgrind    every unit test under valgrind memcheck (plain Debug build in build/debug)
#   make perf        the benchmark report in perf/results/
#   make fuzz        each libFuzzer target for FUZZ_SECONDS (default 60)
#   make install     PREFIX=/usr/local DESTDIR= honoured; runs no package manager
#   make abi-baseline rewrite abi/ after an intended ABI change (tests/unit/abi.test.sh)
#   make docs        rewrite docs/CONFIGURATION.md; the API reference in build/docs/api/html
#   make package     the Debian packages in build/package, lintian-checked and install-tested
#   make test-fresh-install  make install in an empty Debian tree with only the build packages
#   make codegen     regenerate io/proto/*.gen.[ch] from Kafka's message schemas
SHELL := /bin/bash
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
FUZZ_SECONDS ?= 60
BUILD_TYPE ?= Release

.PHONY: all deps package test-fresh-install kafka-jars build build-asan build-tsan build-debug build-fuzz valgrind test test-unit test-long test-compat soak demo perf \
        fuzz install docs abi-baseline codegen format clean

all: build

deps:
	@tests/testkit/install-deps

# The pinned Kafka jars (Maven, once, into ~/.cache/kconsume): the brokers of the integration
# suites; the share-group release, whose one broker the share tests run against (tests/run-suite);
# and the schema release, whose schemas the unit check tests/unit/codegen.test.sh regenerates the
# codec from (tests/testkit/fetch-kafka says why the brokers and the schemas are pinned apart).
kafka-jars: deps
	@tests/testkit/fetch-kafka >/dev/null
	@tests/testkit/fetch-kafka --share >/dev/null
	@tests/testkit/fetch-kafka --schemas >/dev/null

# The library, its CLI and the install need only the build libraries (README, Requirements;
# `make deps` installs them and the test tools): no package manager runs here.
build:
	cmake -S . -B build/release -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_INSTALL_PREFIX=$(PREFIX)
	cmake --build build/release -j $(JOBS)

build-asan: deps
	cmake -S . -B build/asan -DCMAKE_BUILD_TYPE=Debug -DKC_SANITIZE=address
	cmake --build build/asan -j $(JOBS)

# No sanitizer: valgrind runs this one (tests/valgrind-unit).
build-debug: deps
	cmake -S . -B build/debug -DCMAKE_BUILD_TYPE=Debug
	cmake --build build/debug -j $(JOBS)

valgrind: build-debug kafka-jars
	tests/valgrind-unit build/debug

build-tsan: deps
	cmake -S . -B build/tsan -DCMAKE_BUILD_TYPE=Debug -DKC_SANITIZE=thread
	cmake --build build/tsan -j $(JOBS)

# The one command CI runs. Unit tests first (fast, no network), then one cluster for every
# integration suite; tests/run-suite tears the cluster down on any exit.
# The short fuzz pass: FUZZ_SHORT_SECONDS per target over the committed corpora, then the suites
# (whose last line is the "N passed, N failed" total).
FUZZ_SHORT_SECONDS ?= 15
test: build-asan build-tsan build-fuzz kafka-jars
	tests/fuzz/run build/fuzz $(FUZZ_SHORT_SECONDS)
	tests/run-suite --build build/asan --labels "unit kafka interop" --tsan build/tsan

test-unit: build-asan kafka-jars
	cd build/asan && ctest -L unit --output-on-failure -j $(JOBS)

test-long: build-asan build-tsan valgrind kafka-jars
	tests/run-suite --build build/asan --labels "unit kafka interop chaos long" --tsan build/tsan

# The compatibility suite (tests/compat/run-compat, label compat): each Kafka version on a cluster
# of its own, the feature set against it. Its result lines are kept in tests/compat/results.txt and
# README.md's table is generated from them (tests/compat/table.py), also when a feature failed.
test-compat: build-asan kafka-jars
	cd build/asan && ctest -L '^compat$$' --output-on-failure; rc=$$?; cd ../.. && \
	cp build/asan/compat/results.txt tests/compat/results.txt && \
	python3 tests/compat/table.py tests/compat/results.txt --readme README.md; exit $$rc

soak: kafka-jars build
	tests/run-suite --build build/release --labels "soak"

demo: deps build
	tools/demo.sh build/release

perf: deps build
	perf/run

build-fuzz: deps
	CC=clang cmake -S . -B build/fuzz -DCMAKE_BUILD_TYPE=Debug -DKC_FUZZ=ON -DKC_SANITIZE=address
	cmake --build build/fuzz -j $(JOBS)

fuzz: build-fuzz
	tests/fuzz/run build/fuzz $(FUZZ_SECONDS)

# The Debian packages (debian/: libkconsume0, libkconsume-dev, kconsume) built from the working
# tree into build/package, checked by lintian (no error, no warning) and installed into a clean
# tree where examples/ build against them with pkg-config and CMake.
package: deps
	@tests/testkit/install-deps --package
	tests/package/build build/package
	tests/package/deb.test.sh build/package

# make install on an empty Debian tree (mmdebstrap) that has only the build packages, then
# programs and examples/ built against it there (root: a chroot).
test-fresh-install:
	@command -v mmdebstrap >/dev/null || apt-get install -y -q --no-install-recommends mmdebstrap >/dev/null
	tests/package/fresh-install.sh build/fresh-install

install: build
	DESTDIR=$(DESTDIR) cmake --install build/release --prefix $(PREFIX)

# docs/CONFIGURATION.md from the configuration table (tests/unit/test_conf.c checks it is current),
# and the API reference from include/kconsume.h (Doxygen, docs/api/; tests/unit/api_docs.test.sh
# checks it leaves nothing out) into build/docs/api/html.
docs: build
	mkdir -p docs && build/release/kconsume --config-reference > docs/CONFIGURATION.md
	rm -rf build/docs/api && mkdir -p build/docs/api && doxygen docs/api/Doxyfile
	python3 docs/api/check.py include/kconsume.h build/docs/api/xml build/docs/api/warnings.log
	@echo "API reference: build/docs/api/html/index.html"

# The ABI baseline tests/unit/abi.test.sh compares the library with (abi/dump): run after an
# intended ABI change and commit abi/ with it.
abi-baseline: build-asan
	abi/dump build/asan/libkconsume.so abi/$$(objdump -p build/asan/libkconsume.so | awk '$$1 == "SONAME" {print $$2}').abi

codegen:
	python3 io/proto/gen/generate.py

format: deps
	clang-format -i $$(git ls-files '*.c' '*.h' | grep -v '\.gen\.')

clean:
	rm -rf build
