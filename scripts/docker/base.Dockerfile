# A stand-in for python:3.11-slim, for machines that cannot reach Docker Hub (the test set-up
# builds it; the product's Dockerfile never changes for it). Debian's own python3.11 in a venv
# that is first on PATH, so `pip install` behaves as in the official image rather than against
# Debian's externally-managed system Python.
ARG DEBIAN_IMAGE=draftgen-test/debian:bookworm
FROM ${DEBIAN_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates \
    && apt-get clean && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
    && python3 -m venv /usr/local/py
# The machine's CA bundle: HTTPS here passes a proxy that only this machine trusts. Stand-in
# base only: the product image must never carry a machine's certificates.
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
ENV PATH=/usr/local/py/bin:$PATH \
    SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt
CMD ["python3"]
