#!/bin/sh
# Run by the nginx image's entrypoint (/docker-entrypoint.d/) before nginx starts: makes a
# self-signed certificate for localhost on first start, so the shipped stack serves TLS at once.
# A certificate already there (a real one mounted at /etc/nginx/tls, or the one made before) is
# left alone. docs/operations.md, "TLS", says how to put a real one in.
set -eu
dir=/etc/nginx/tls
if [ -s "$dir/cert.pem" ] && [ -s "$dir/key.pem" ]; then exit 0; fi
mkdir -p "$dir"
umask 077
openssl req -x509 -newkey rsa:2048 -sha256 -days 825 -nodes \
  -keyout "$dir/key.pem" -out "$dir/cert.pem" \
  -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1"
echo "nginx-self-signed: made a self-signed certificate for localhost in $dir (replace it with a real one: docs/operations.md, TLS)"
