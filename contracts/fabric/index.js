/*
 * Entry point loaded by fabric-chaincode-node (`fabric-chaincode-node start`), which reads the
 * `contracts` export. The dev peer imports the same module.
 *
 * SPDX-License-Identifier: Apache-2.0
 */
"use strict"

const { AnchorContract, EVENT_NAME } = require("./lib/anchor-contract.js")

module.exports.AnchorContract = AnchorContract
module.exports.EVENT_NAME = EVENT_NAME
module.exports.contracts = [AnchorContract]
