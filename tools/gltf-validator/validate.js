#!/usr/bin/env node
// Validate glTF/GLB files with the official Khronos validator and print one
// JSON document on stdout: {"validatorVersion", "files": [{file, errors,
// warnings, infos, hints, messages: [{code, severity, message, pointer}]}]}.
// Usage: node validate.js [--max-issues N] FILE...   (exit 0 unless it crashed)
'use strict';
const fs = require('fs');
const path = require('path');
const validator = require('gltf-validator');

const SEVERITY = ['error', 'warning', 'info', 'hint'];

async function validateFile(file, maxIssues) {
  const bytes = new Uint8Array(fs.readFileSync(file));
  const report = await validator.validateBytes(bytes, {
    uri: path.basename(file),
    maxIssues,
    writeTimestamp: false,
    externalResourceFunction: (uri) => new Promise((resolve, reject) => {
      const full = path.resolve(path.dirname(file), decodeURIComponent(uri));
      fs.readFile(full, (err, data) => (err ? reject(err.toString()) : resolve(new Uint8Array(data))));
    }),
  });
  const issues = report.issues;
  return {
    file,
    errors: issues.numErrors,
    warnings: issues.numWarnings,
    infos: issues.numInfos,
    hints: issues.numHints,
    truncated: issues.truncated,
    messages: issues.messages.map((m) => ({
      code: m.code, severity: SEVERITY[m.severity] || String(m.severity),
      message: m.message, pointer: m.pointer,
    })),
  };
}

async function main() {
  const args = process.argv.slice(2);
  let maxIssues = 100;
  const files = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--max-issues') maxIssues = parseInt(args[++i], 10);
    else files.push(args[i]);
  }
  const out = { validatorVersion: validator.version(), files: [] };
  for (const file of files) {
    try {
      out.files.push(await validateFile(file, maxIssues));
    } catch (e) {
      out.files.push({ file, errors: 1, warnings: 0, infos: 0, hints: 0,
        messages: [{ code: 'VALIDATOR_FAILED', severity: 'error', message: String(e) }] });
    }
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + '\n'); process.exit(2); });
