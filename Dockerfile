# One image for both processes: the chart runs `modelbooster webhook` or `modelbooster reconciler`.
#
#   docker build -t modelbooster:dev .
#   docker build --build-arg EXTRAS=speed,milp -t modelbooster:dev .   # adds SciPy's MILP solver

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: resolve and install the runtime dependencies into a virtualenv -------------------------------
FROM ${PYTHON_IMAGE} AS build
# Optional extras of the distribution to install (pyproject.toml [project.optional-dependencies]); never `dev`.
ARG EXTRAS=speed
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
# No pip (nor setuptools) in the virtualenv: the base image's pip installs into it, so the image ships no
# installer and the build has nothing to uninstall.
RUN python -m venv --without-pip /opt/modelbooster
WORKDIR /src
# Metadata first, so the dependency layer is rebuilt only when pyproject.toml changes.
COPY pyproject.toml README.md LICENSE ./
COPY modelbooster/ modelbooster/
COPY shared/ shared/
COPY certs/ certs/
COPY webhook/ webhook/
COPY reconciler/ reconciler/
COPY optimizer/ optimizer/
COPY process/ process/
# A regular (non-editable) install: the final stage copies the virtualenv and not the sources.
RUN python -m pip --python /opt/modelbooster/bin/python install --no-compile "./[${EXTRAS}]" \
 && /opt/modelbooster/bin/python -m compileall -q /opt/modelbooster

# --- runtime: the virtualenv and nothing else ---------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
LABEL org.opencontainers.image.title="modelbooster" \
      org.opencontainers.image.description="ModelBooster admission webhook, reconciler and Inferno optimizer" \
      org.opencontainers.image.licenses="Apache-2.0"
# The chart runs the pods as 65532 with a read-only root filesystem, so nothing may need writing at run time:
# byte code is compiled at build time and Python never tries to write it.
ENV PATH=/opt/modelbooster/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/modelbooster /opt/modelbooster
# A system account (no password aging, no subordinate ids, no mail spool) with the id the chart runs as,
# 65532, above the system range of login.defs (SYS_UID_MAX 999, and UID_MAX 60000 for other accounts):
# --key raises the bound for this one call, so that useradd does not warn about the range.
RUN groupadd --system --key SYS_GID_MAX=65532 --gid 65532 modelbooster \
 && useradd --system --key SYS_UID_MAX=65532 --uid 65532 --gid 65532 \
      --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin modelbooster
USER 65532:65532
# webhook: 8443 (HTTPS admission), 8080 (metrics, health); reconciler: 8080 (metrics, health).
EXPOSE 8443 8080
ENTRYPOINT ["modelbooster"]
CMD ["--help"]
